/**
 * gpuSessions.stopServer and gpuSessions.restartServer: confirmed (modal), with a Drain choice; restart starts
 * the server again with the same command line and waits until it is ready. Refused in untrusted workspaces. When a
 * gateway routes to the server, first offered: take it out of rotation, stop anyway, or cancel (outOfRotation.ts); a
 * restart that took it out adds it back to those gateways once it is ready.
 */
import * as vscode from 'vscode';
import { errorMessage } from '../../core/util/errors';
import { stopServer as stopOnNode } from '../../core/launch/launch';
import type { SglangServer } from '../../core/sglang/serverArgv';
import { treeServers } from '../treeServers';
import { drainUi } from './drainUi';
import { addBackAfterRestart, offerOutOfRotation } from './outOfRotation';
import type { Services } from '../services';
import type { TreeNode } from '../tree';
import { requireTrust } from '../trust';
import type { Command } from './command';

/** Answers given beforehand (tests), instead of the modals: the rotation question, then Stop / Drain, then Stop, or Cancel. */
type StopOpts = { rotation?: 'take' | 'anyway'; answer?: 'stop' | 'drain' | 'cancel' };

async function stopServerCommand(s: Services, arg?: unknown, restart = false, opts: StopOpts = {}): Promise<boolean> {
  const Verb = restart ? 'Restart' : 'Stop';
  if (!requireTrust(restart ? 'Restarting servers' : 'Stopping servers')) return false;
  const el = arg as TreeNode | undefined;
  const node = (await s.resolver.resolve(arg, { title: `${Verb} Server` }))?.name;
  if (!node) return false;
  // a crashed server (its row under Servers, its problem row, its alert): started again with its last command line
  const gone = restart ? crashedTarget(s, node, el) : undefined;
  if (gone) return restartCrashed(s, node, gone, opts.answer !== undefined);
  const t = s.transportFor(node);
  let port: number;
  let pid: number | undefined;
  let what: string;
  if (el && typeof el === 'object' && el.type === 'server') {
    port = el.server.port;
    pid = el.server.pid;
    what = `${el.server.servedModelName ?? el.server.modelPath ?? 'SGLang'} (pid ${pid}, GPU ${el.server.gpus.join(',') || '?'})`;
  } else {
    let servers: SglangServer[];
    try {
      // the servers the tree lists (the picker offered another user's processes)
      servers = await treeServers(s, node);
    } catch (e) {
      void vscode.window.showErrorMessage(`GPU Sessions: cannot read the servers of ${node}: ${errorMessage(e)}`);
      return false;
    }
    if (!servers.length) {
      void vscode.window.showInformationMessage(`GPU Sessions: no SGLang server is running on ${node}.`);
      return false;
    }
    const pick = await vscode.window.showQuickPick(
      servers.map((s) => ({
        label: `port ${s.port}`,
        description: `${s.servedModelName ?? s.modelPath ?? ''}`,
        detail: `pid ${s.pid}, GPU ${s.gpus.join(',') || '?'}${s.logFile ? `, log ${s.logFile}` : ''}`,
        s,
      })),
      { title: `${Verb} Server on ${node}`, placeHolder: 'Which server?' },
    );
    if (!pick) return false;
    port = pick.s.port;
    pid = pick.s.pid;
    what = `${pick.s.servedModelName ?? pick.s.modelPath ?? 'SGLang'} (pid ${pid}, GPU ${pick.s.gpus.join(',') || '?'})`;
  }
  // a gateway routing to it: offer to take it out of rotation first (outOfRotation.ts)
  const rotation = await offerOutOfRotation(s, node, port, restart, opts.rotation);
  if (!rotation) return false;
  const stop = Verb;
  const drainStop = `Drain, then ${Verb}`;
  const choice = opts.answer
    ? opts.answer === 'cancel'
      ? undefined
      : opts.answer === 'drain'
        ? drainStop
        : stop
    : await vscode.window.showWarningMessage(
        `${Verb} the SGLang server on port ${port} of ${node}?`,
        {
          modal: true,
          detail:
            `${what}\n\n${Verb}: SIGTERM now (SIGKILL after 30 s); requests in flight fail.\nDrain, then ${Verb}: wait until its running ` +
            `requests reach 0 (stop sending new ones first), then stop it — at the latest after 5 min (SIGTERM); "Stop ` +
            `now" ends the wait.${restart ? '\n\nIt is then started again with the same command line, environment and GPUs, and awaited until ready.' : ''}`,
        },
        drainStop,
        stop,
      );
  if (!choice) {
    // Cancelled after it was taken out of rotation: it still runs, so it goes back into the same gateways.
    if (rotation.removed.length) await addBackAfterRestart(s, node, port, rotation.removed);
    return false;
  }
  // its end is the user's doing: not a crash alert, a neutral "stopped by you" row
  s.live.stopped.mark(node, port, Date.now(), pid);
  if (restart) {
    const ok = await restartWithProgress(s, node, port, { drain: choice === drainStop });
    if (ok === undefined) return false;
    if (!ok || !rotation.removed.length) {
      if (rotation.removed.length)
        s.log.warn(`${node} :${port}: not ready after the restart, so it stays out of rotation (add it back by hand once it is).`);
      return ok;
    }
    // taken out of rotation before the restart: back into the same gateways now that it is ready
    return addBackAfterRestart(s, node, port, rotation.removed);
  }
  const r = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: stopping port ${port} on ${node}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      const d = drainUi(node, port, progress);
      try {
        return await stopOnNode(t, {
          port,
          pid,
          drain: choice === drainStop,
          signal: ac.signal,
          ...d.opts,
        });
      } catch (e) {
        if (ac.signal.aborted)
          // Cancel says what it left: the server was not signalled
          void vscode.window.showInformationMessage(
            `GPU Sessions: cancelled — the server on port ${port} of ${node} is still running (not stopped).`,
          );
        else void vscode.window.showErrorMessage(`GPU Sessions: stopping port ${port} on ${node} failed: ${errorMessage(e)}`);
        return undefined;
      } finally {
        d.done();
      }
    },
  );
  if (!r?.stopped) s.live.stopped.clear(node, port); // still running: whatever happens to it next is not the user's doing
  if (!r) return false;
  s.log.info(`Stop on ${node}: ${r.message}`);
  if (r.stopped) void vscode.window.showInformationMessage(`GPU Sessions: ${r.message}`);
  else void vscode.window.showWarningMessage(`GPU Sessions: ${r.message}`);
  void s.fleet.refresh(node);
  return r.stopped;
}

/** The crashed server an argument names: a crashed server row, or a crashed server's problem row. */
function crashedTarget(s: Services, node: string, el: TreeNode | undefined): SglangServer | undefined {
  if (!el || typeof el !== 'object') return undefined;
  if (el.type === 'server' && el.crashed) return el.server;
  if (el.type === 'info' && el.crashedPort !== undefined) return s.live.lastSeenServer(node, el.crashedPort);
  return undefined;
}

/**
 * Restart Server on a crashed server: nothing to stop or drain; one question, then its command line as captured
 * while it ran is launched again and awaited until ready (core/launch/restart.ts, `captured`).
 */
async function restartCrashed(s: Services, node: string, srv: SglangServer, answered: boolean): Promise<boolean> {
  const what = `${srv.servedModelName ?? srv.modelPath ?? 'SGLang'} (was pid ${srv.pid}, GPU ${srv.gpus.join(',') || '?'})`;
  const go = 'Restart';
  const choice = answered
    ? go
    : await vscode.window.showWarningMessage(
        `Restart the crashed SGLang server on port ${srv.port} of ${node}?`,
        { modal: true, detail: `${what}\n\nIt is started again with the command line it ran with, and awaited until ready.` },
        go,
      );
  if (choice !== go) return false;
  s.live.stopped.clear(node, srv.port);
  return (await restartWithProgress(s, node, srv.port, { captured: srv })) ?? false;
}

/** Restarts with a progress notification (cancellable) and says how it ended; undefined when it failed or was cancelled. */
async function restartWithProgress(
  s: Services,
  node: string,
  port: number,
  o: { drain?: boolean; captured?: SglangServer },
): Promise<boolean | undefined> {
  const rr = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: restarting port ${port} on ${node}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      try {
        const { restartServer } = await import('../../core/launch/restart');
        return await restartServer(s.transportFor(node), {
          port,
          ...o,
          signal: ac.signal,
          onProgress: (m) => progress.report({ message: m }),
        });
      } catch (e) {
        if (!ac.signal.aborted)
          void vscode.window.showErrorMessage(`GPU Sessions: restarting port ${port} on ${node} failed: ${errorMessage(e)}`);
        return undefined;
      }
    },
  );
  if (!rr) return undefined;
  s.log.info(`Restart on ${node}: ${rr.message}`);
  const ok = rr.launch?.outcome === 'ready';
  if (ok) void vscode.window.showInformationMessage(`GPU Sessions: ${rr.message}`);
  else void vscode.window.showWarningMessage(`GPU Sessions: ${rr.message}`);
  void s.fleet.refresh(node);
  return ok;
}

export const stopServer: Command = {
  id: 'gpuSessions.stopServer',
  run: (s, arg?: unknown, opts?: StopOpts) => stopServerCommand(s, arg, false, opts),
};
export const restartServer: Command = {
  id: 'gpuSessions.restartServer',
  run: (s, arg?: unknown, opts?: StopOpts) => stopServerCommand(s, arg, true, opts),
};
