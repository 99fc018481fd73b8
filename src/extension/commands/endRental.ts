/**
 * gpuSessions.endRental — "End Rental…": the same core flow as `gpu-sessions end-rental`
 * (core/flows/endRental.ts). The action is picked among those the node's probe offers; the checks run first (a dry
 * run: the latest salvage under gpuSessions.salvage.folder must say safe and still hold), and a refusal names each
 * reason. A modal then names the exact command that runs on the node; the one provider call is made and verified
 * (the provider's status, SSH going away), with progress. Refused in an untrusted workspace.
 */
import * as vscode from 'vscode';
import type { ProviderAction } from '../../core/provider/detect';
import type { EndRentalResult } from '../../core/flows/endRental';
import { errorMessage } from '../../core/util/errors';
import type { Services } from '../services';
import { requireTrust } from '../trust';
import type { Command } from './command';
import { salvageSettings } from './salvageNode';

type EndOpts = {
  action?: ProviderAction;
  /** Skip the confirmation modal (tests). */
  assumeYes?: boolean;
  verifyTimeoutS?: number;
};

const ACTION_TEXT: Record<ProviderAction, string> = {
  stop: "the provider's stop: the GPU is released; the disk stays (and may still bill)",
  terminate: "the provider's terminate: the instance and its disk are destroyed",
  shutdown: 'sudo shutdown -h now: some providers (Azure, any that bill a stopped disk) keep billing',
};

/** The argument: a node element or a node name; none: a node picker. Returns `end-rental --json`'s object. */
export const endRentalCommand: Command = {
  id: 'gpuSessions.endRental',
  run: (s, el?: unknown, opts?: EndOpts) => endRentalRun(s, el, opts),
};

async function endRentalRun(s: Services, arg: unknown, opts: EndOpts = {}): Promise<Record<string, unknown> | undefined> {
  const node = await s.resolver.resolve(arg, {
    title: 'End Rental',
    placeHolder: 'Whose rental do you end? (only on a safe salvage verdict that still holds)',
    nodeElementOnly: true,
  });
  if (!node) return undefined;
  if (!requireTrust('Ending rentals')) return undefined;
  const settings = await salvageSettings(s, node);
  if (!settings) return undefined;
  const offered = s.fleet.status(node.name).probe?.provider?.actions ?? [];
  let action = opts.action;
  if (!action) {
    const pick = await vscode.window.showQuickPick(
      (['stop', 'terminate', 'shutdown'] as const).map((a) => ({
        label: a,
        description: offered.includes(a) ? '' : 'not offered by this node',
        detail: ACTION_TEXT[a],
        action: a,
      })),
      { title: `End the rental of ${node.name}`, placeHolder: 'How?' },
    );
    if (!pick) return undefined;
    action = pick.action;
  }
  const { endRental, endRentalJson, DEFAULT_VERIFY_TIMEOUT_S } = await import('../../core/flows/endRental');
  const base = {
    node: node.name,
    transport: s.transportFor(node),
    freshTransport: () => s.connections.fresh(node),
    dest: settings.base,
    action,
    verifyTimeoutMs: (opts.verifyTimeoutS ?? DEFAULT_VERIFY_TIMEOUT_S) * 1000,
  };
  const run = (dryRun: boolean, title: string) =>
    vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title }, (progress) =>
      endRental({ ...base, dryRun, onProgress: (m) => progress.report({ message: m }) }),
    );
  let r: EndRentalResult;
  try {
    r = await run(true, `Checking ${node.name} before ending its rental`);
    if (r.outcome === 'refused') {
      s.log.warn(`End Rental of ${node.name} refused: ${r.reasons.map((x) => `${x.code}: ${x.message}`).join(' | ')}`);
      void vscode.window.showErrorMessage(
        `GPU Sessions: the rental of ${node.name} was not ended. ${r.reasons.map((x) => x.message).join(' ')}`,
      );
      return endRentalJson(r);
    }
    if (!opts.assumeYes) {
      const go = await vscode.window.showWarningMessage(
        `End the ${r.provider} rental of ${node.name}${r.instanceId ? ` (${r.instanceId})` : ''}?`,
        {
          modal: true,
          detail:
            `The salvage verdict of ${r.verdictAt} still holds. This runs on the node, with the node's own key:\n\n  ${r.command}\n\n` +
            `${ACTION_TEXT[action]}. It cannot be undone.`,
        },
        'End Rental',
      );
      if (go !== 'End Rental') return undefined;
    }
    r = await run(false, `Ending the rental of ${node.name}`);
  } catch (e) {
    s.log.error(`End Rental of ${node.name}: ${errorMessage(e)}`);
    void vscode.window.showErrorMessage(`GPU Sessions: cannot end the rental of ${node.name}: ${errorMessage(e)}`);
    return undefined;
  }
  for (const e of r.evidence) s.log.info(`End Rental of ${node.name}: ${e}`);
  if (r.outcome === 'ended')
    void vscode.window.showInformationMessage(`GPU Sessions: the rental of ${node.name} is ended and verified (${action}, ${r.endedAt}).`);
  else if (r.outcome === 'refused')
    void vscode.window.showErrorMessage(
      `GPU Sessions: the rental of ${node.name} was not ended. ${r.reasons.map((x) => x.message).join(' ')}`,
    );
  else
    void vscode.window.showErrorMessage(
      `GPU Sessions: ${r.command} ran on ${node.name}, but the end of the rental could not be verified; check the provider's console. ` +
        (r.evidence.slice(-2).join(' ') || ''),
    );
  return endRentalJson(r);
}
