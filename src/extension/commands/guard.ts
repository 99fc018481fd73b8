/**
 * gpuSessions.startGuard and gpuSessions.stopGuard: the node's own guard from the node's menu, through the
 * same core flow as `gpu-sessions guard NODE start|stop` (core/flows/guard.ts). Start asks where the guard copies
 * the work (an S3 prefix, signed here with your own AWS credentials as a short-lived upload policy; or a folder on the
 * node) and what it does when the job is done; both are confirmed (modal) and refused in an untrusted workspace.
 */
import * as vscode from 'vscode';
import { guardStart, guardStartOptions } from '../../core/flows/guard';
import { guardStopOperation } from '../../core/guard/operations';
import { runOperation } from '../../core/remote/operation';
import { GpuSessionsError, errorMessage } from '../../core/util/errors';
import type { Services } from '../services';
import { requireTrust } from '../trust';
import type { Command } from './command';

/** Answers given beforehand (tests, the MCP tool), instead of the pickers and the modal. */
type StartGuardOpts = {
  s3?: string;
  s3Endpoint?: string;
  to?: string;
  whenDone?: 'notify' | 'stop' | 'terminate';
  assumeYes?: boolean;
};

async function askTarget(node: string): Promise<{ s3?: string; to?: string } | undefined> {
  const kind = await vscode.window.showQuickPick(
    [
      { label: 'An S3 prefix', description: 's3://bucket/prefix — signed with your AWS credentials, at most 7 days', k: 's3' as const },
      { label: 'A folder on the node', description: 'another disk or volume of the node that outlives it', k: 'to' as const },
    ],
    { title: `Start Guard on ${node}`, placeHolder: 'Where does the guard copy the work while you are away?' },
  );
  if (!kind) return undefined;
  const value = await vscode.window.showInputBox({
    title: `Start Guard on ${node}`,
    prompt: kind.k === 's3' ? 'S3 prefix (s3://bucket/prefix)' : 'Absolute folder on the node (or ~/…)',
    validateInput: (v) =>
      kind.k === 's3'
        ? /^s3:\/\/[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](\/.*)?$/.test(v.trim())
          ? null
          : 'an s3://bucket/prefix URL'
        : v.trim().startsWith('/') || v.trim().startsWith('~/')
          ? null
          : 'an absolute folder on the node, or ~/…',
  });
  if (!value) return undefined;
  return kind.k === 's3' ? { s3: value.trim() } : { to: value.trim() };
}

async function startGuardCommand(s: Services, arg?: unknown, opts: StartGuardOpts = {}): Promise<Record<string, unknown> | undefined> {
  if (!requireTrust('Starting the node guard')) return undefined;
  const node = (await s.resolver.resolve(arg, { title: 'Start Guard' }))?.name;
  if (!node) return undefined;
  const target = opts.s3 || opts.to ? { s3: opts.s3, to: opts.to } : await askTarget(node);
  if (!target) return undefined;
  let whenDone = opts.whenDone;
  if (!whenDone) {
    const pick = await vscode.window.showQuickPick(
      [
        { label: 'Tell me', description: 'a final sync, then a journal entry (notify)', v: 'notify' as const },
        {
          label: 'Stop the rental',
          description: 'after a final sync and a safe verdict, with the provider’s own stop',
          v: 'stop' as const,
        },
        { label: 'Terminate the rental', description: 'as Stop, and the disk goes too', v: 'terminate' as const },
      ],
      { title: `Start Guard on ${node}`, placeHolder: 'When the job is done…' },
    );
    if (!pick) return undefined;
    whenDone = pick.v;
  }
  let o;
  try {
    o = guardStartOptions({ s3: target.s3, to: target.to, 's3-endpoint': opts.s3Endpoint, 'when-done': whenDone }, false, (m) => {
      throw new GpuSessionsError('usage', m);
    });
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: ${errorMessage(e)}`);
    return undefined;
  }
  if (!opts.assumeYes) {
    const ok = await vscode.window.showWarningMessage(
      `Start the guard on ${node}?`,
      {
        modal: true,
        detail:
          `It runs on the node, detached, and copies the work to ${target.s3 ?? target.to} every ${o.intervalS} s, checks the ` +
          `generated data, and when the job is done: ${whenDone}${whenDone !== 'notify' ? ' (only on a safe verdict, verified)' : ''}.` +
          (target.s3 ? '\nYour AWS key stays here: the node gets an upload policy for that prefix only, valid at most 7 days.' : ''),
      },
      'Start Guard',
    );
    if (ok !== 'Start Guard') return undefined;
  }
  try {
    const r = await guardStart(s.transportFor(node), o);
    await s.guards.check(node);
    void vscode.window.showInformationMessage(
      r.alreadyRunning
        ? `GPU Sessions: a guard already runs on ${node} (pid ${r.pid}).`
        : `GPU Sessions: the guard runs on ${node} (pid ${r.pid}).`,
    );
    return { node, ...r };
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: could not start the guard on ${node}: ${errorMessage(e)}`);
    return undefined;
  }
}

async function stopGuardCommand(
  s: Services,
  arg?: unknown,
  opts: { assumeYes?: boolean } = {},
): Promise<Record<string, unknown> | undefined> {
  if (!requireTrust('Stopping the node guard')) return undefined;
  const node = (await s.resolver.resolve(arg, { title: 'Stop Guard' }))?.name;
  if (!node) return undefined;
  if (!opts.assumeYes) {
    const ok = await vscode.window.showWarningMessage(
      `Stop the guard on ${node}?`,
      { modal: true, detail: 'Nothing copies the work off the node while the laptop is away until you start it again.' },
      'Stop Guard',
    );
    if (ok !== 'Stop Guard') return undefined;
  }
  try {
    const r = await runOperation(s.transportFor(node), guardStopOperation());
    await s.guards.check(node);
    void vscode.window.showInformationMessage(
      r.wasRunning
        ? `GPU Sessions: the guard on ${node} stopped${r.stopped ? '' : ' (not confirmed)'}.`
        : `GPU Sessions: no guard was running on ${node}.`,
    );
    return { node, ...r };
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: could not stop the guard on ${node}: ${errorMessage(e)}`);
    return undefined;
  }
}

export const startGuard: Command = {
  id: 'gpuSessions.startGuard',
  run: (s, el?: unknown, opts?: StartGuardOpts) => startGuardCommand(s, el, opts),
};

export const stopGuard: Command = {
  id: 'gpuSessions.stopGuard',
  run: (s, el?: unknown, opts?: { assumeYes?: boolean }) => stopGuardCommand(s, el, opts),
};
