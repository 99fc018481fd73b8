/**
 * Before Stop Server / Restart Server: when a gateway of the fleet routes to that server (from the probes the tree
 * already has: core/gateway/rotation.ts), offer "Take It Out of Rotation First" — remove its worker from every such
 * gateway and wait until none lists it (core/flows/release.ts removeFromGateways, the release's own step), then go
 * on — "Stop Anyway", or Cancel.
 */
import * as vscode from 'vscode';
import { Routing, RotationNode, lastWorkerLines, routingLines, routingTo } from '../../core/gateway/rotation';
import { errorMessage } from '../../core/util/errors';
import type { Services } from '../services';

/** The fleet as the tree last probed it: every node, its servers (undefined when never probed) and its gateways. */
function rotationFleet(s: Pick<Services, 'fleet'>): RotationNode[] {
  return s.fleet.nodes().map((n) => {
    const p = s.fleet.status(n.name).probe;
    return { node: n.name, host: n.host, hostname: p?.hostname ?? null, servers: p?.servers, gateways: p?.gateways ?? [] };
  });
}

/** How long the gateways may take to apply the removals. */
const REMOVE_TIMEOUT_MS = 60_000;

/**
 * Go on with the stop/restart — with the routings it took the server out of (empty: nothing routes there, or
 * "anyway"; a restart adds those back once ready: addBackAfterRestart) — or false: cancelled or the removal failed.
 */
export async function offerOutOfRotation(
  s: Services,
  node: string,
  port: number,
  restart: boolean,
  /** The answer given beforehand (tests), instead of the modal. */
  answer?: 'take' | 'anyway',
): Promise<false | { removed: Routing[] }> {
  const rs = routingTo(rotationFleet(s), node, port);
  if (!rs.length) return { removed: [] };
  const verb = restart ? 'Restart' : 'Stop';
  const take = 'Take It Out of Rotation First';
  const anyway = `${verb} Anyway`;
  const urls = [...new Set(rs.flatMap((r) => r.workers.map((w) => w.url)))];
  // a gateway left with no healthy worker answers 503: the question warns, and the log keeps it
  const last = lastWorkerLines(rs);
  for (const l of last) s.log.warn(`${node} :${port}: ${l}`);
  const a =
    answer === 'take'
      ? take
      : answer === 'anyway'
        ? anyway
        : await vscode.window.showWarningMessage(
            `${rs.length === 1 ? 'A gateway routes' : `${rs.length} gateways route`} to the server on port ${port} of ${node}.`,
            {
              modal: true,
              detail:
                `${routingLines(rs).join('\n')}${last.length ? `\n\n⚠ ${last.join('\n⚠ ')}` : ''}` +
                `\n\n${take}: remove it from ${rs.length === 1 ? 'that gateway' : 'those gateways'}, wait until ` +
                `none lists it, then ${verb.toLowerCase()} the server (the gateways keep running).` +
                (restart ? ' Once the restarted server is ready, it is added back to the same gateways.' : '') +
                `\n${anyway}: the gateway goes on sending it requests, which fail until its health check notices.`,
            },
            take,
            anyway,
          );
  if (a === anyway) return { removed: [] };
  if (a !== take) return false;
  const { removeFromGateways } = await import('../../core/flows/release');
  // the user's own removal: a neutral row, not a warning
  for (const r of rs) for (const w of r.workers) s.live.released.markRemoved(r.node, w.url, r.gateway.port);
  const done = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: port ${port} of ${node} out of rotation`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      const out: Array<{ node: string; port: number | null; removed: string[] }> = [];
      try {
        await removeFromGateways(
          rs,
          (n) => s.transportFor(n),
          {
            deadline: Date.now() + REMOVE_TIMEOUT_MS,
            signal: ac.signal,
            onProgress: (m) => {
              s.log.info(`${node} :${port}: ${m}`);
              progress.report({ message: m });
            },
            nothingStopped: `The server on port ${port} of ${node} was not ${restart ? 'restarted' : 'stopped'}.`,
          },
          out,
        );
        return true;
      } catch (e) {
        const removed = out.flatMap((g) => g.removed.map((u) => `${u} (gateway :${g.port} on ${g.node})`));
        const left = removed.length ? ` Already out of rotation: ${removed.join(', ')}.` : '';
        s.log.warn(`${node} :${port}: ${errorMessage(e)}${left}`);
        void vscode.window.showWarningMessage(`GPU Sessions: ${errorMessage(e)}${left}`);
        return false;
      } finally {
        for (const n of new Set(rs.map((r) => r.node))) void s.fleet.refresh(n).catch(() => undefined);
      }
    },
  );
  if (!done) return false;
  s.log.info(`${node} :${port}: out of rotation (${urls.join(', ')}).`);
  return { removed: rs };
}

/** After a restart that took the server out of rotation: add it back to those gateways and say how it went. */
export async function addBackAfterRestart(s: Services, node: string, port: number, removed: Routing[]): Promise<boolean> {
  if (!removed.length) return true;
  const { addBackToGateways } = await import('../../core/gateway/addBack');
  const outcomes = await vscode.window.withProgress(
    {
      location: vscode.ProgressLocation.Notification,
      title: `GPU Sessions: port ${port} of ${node} back into rotation`,
      cancellable: true,
    },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      try {
        return await addBackToGateways(removed, (n) => s.transportFor(n), {
          timeoutMs: REMOVE_TIMEOUT_MS,
          signal: ac.signal,
          onProgress: (m) => {
            s.log.info(`${node} :${port}: ${m}`);
            progress.report({ message: m });
          },
        });
      } finally {
        for (const n of new Set(removed.map((r) => r.node))) void s.fleet.refresh(n).catch(() => undefined);
      }
    },
  );
  const failed = outcomes.flatMap((o) => o.failed.map((f) => `${f.url} on the gateway :${o.port ?? '?'} (${o.node}): ${f.message}`));
  const added = outcomes.flatMap((o) => o.added.map((u) => `${u} (gateway :${o.port ?? '?'} on ${o.node})`));
  if (added.length) s.log.info(`${node} :${port}: back in rotation: ${added.join(', ')}.`);
  if (failed.length) {
    s.log.warn(`${node} :${port}: not back in rotation: ${failed.join('; ')}`);
    void vscode.window.showWarningMessage(
      `GPU Sessions: the restarted server on port ${port} of ${node} is not back in rotation: ${failed.join('; ')}. Add it to the gateway by hand.`,
    );
    return false;
  }
  return true;
}
