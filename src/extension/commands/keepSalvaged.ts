/**
 * gpuSessions.keepSalvaged — "Keep Node Salvaged" (toggle): on, one full salvage of everything of value
 * (no review, servers left running), then every gpuSessions.salvage.keepIntervalSeconds only what changed
 * (the CLI's `salvage --watch` loop); the node's tree row says "synced 40 s ago · 1.2 MiB at risk". Off,
 * the watch ends between syncs. When the node vanishes the last synced state is final (SALVAGE.md says so).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { runOperation } from '../../core/remote/operation';
import { probeOperation } from '../../core/node/probe';
import { errorMessage } from '../../core/util/errors';
import { cfg } from '../config';
import type { Services } from '../services';
import type { Command } from './command';
import { openReport, salvageSettings } from './salvageNode';

/** `on`: force on/off instead of toggling; `intervalS`: instead of the setting (tests). */
type KeepOpts = { on?: boolean; intervalS?: number };

export const keepSalvaged: Command = {
  id: 'gpuSessions.keepSalvaged',
  run: (s, el?: unknown, opts?: KeepOpts) => keepSalvagedCommand(s, el, opts),
};

async function keepSalvagedCommand(deps: Services, arg: unknown, opts: KeepOpts = {}): Promise<{ on: boolean; dest?: string } | undefined> {
  const node = await deps.resolver.resolve(arg, {
    title: 'Keep Node Salvaged',
    placeHolder: 'Which node should be kept salvaged while it runs (or no longer)?',
    nodeElementOnly: true,
  });
  if (!node) return undefined;
  const on = opts.on ?? !deps.keepSalvaged.isOn(node.name);
  if (!on) {
    await deps.keepSalvaged.stop(node.name);
    void vscode.window.setStatusBarMessage(`GPU Sessions: ${node.name} is no longer kept salvaged`, 5000);
    return { on: false };
  }
  const settings = await salvageSettings(deps, node);
  if (!settings) return { on: false };
  const intervalS = opts.intervalS ?? cfg<number>('salvage.keepIntervalSeconds', 60);
  try {
    const m = await deps.keepSalvaged.start(node.name, intervalS, async (signal, onProgress) => {
      const { Salvager } = await import('../../core/flows/salvage');
      const probe =
        deps.fleet.status(node.name).probe ??
        (await runOperation(settings.transport, probeOperation(node.name, { roots: node.roots }), signal));
      return new Salvager({ ...settings, servers: probe.servers, signal, onProgress });
    });
    if (!m) return { on: false };
    void vscode.window.setStatusBarMessage(`GPU Sessions: keeping ${node.name} salvaged every ${intervalS} s → ${m.dest}`, 8000);
    return { on: true, dest: m.dest };
  } catch (e) {
    void vscode.window
      .showErrorMessage(`GPU Sessions: could not keep ${node.name} salvaged: ${errorMessage(e)}`, 'Show Log')
      .then((c) => c && deps.showLog());
    return { on: false };
  }
}

/** The notification when a node vanished during its watch. */
export function announceVanished(node: string, dest: string): void {
  void vscode.window
    .showWarningMessage(
      `GPU Sessions: ${node} vanished while it was kept salvaged — the last synced state is final (SALVAGE.md says what may be lost).`,
      'Open Report',
    )
    .then((c) => c && openReport(vscode.Uri.file(path.join(dest, 'SALVAGE.md'))));
}
