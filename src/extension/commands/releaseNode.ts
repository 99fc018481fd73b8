/**
 * gpuSessions.releaseNode — "Release Node…": give a node back without dropping a request, through the same core flow
 * as `gpu-sessions release` (core/flows/release.ts planRelease → executeRelease). The gateways looked at: those on
 * every node of the tree that answers (a node never reached is not asked — no host-key or passphrase prompt for it).
 * A modal review names the gateways and worker URLs to remove, the servers to drain then stop and the salvage folder;
 * the progress notification (cancellable) says each removal and drain, then the salvage; its verdict is shown as
 * Salvage Node shows it (showSalvageVerdict). Cancel during the removals or the drain stops there and says what it
 * left. Refused in an untrusted workspace (it stops servers).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { ReleaseFleetNode, drainProgressText } from '../../core/flows/release';
import { lastWorkerLines, routingLines } from '../../core/gateway/rotation';
import type { SalvageManifest } from '../../core/flows/salvage';
import type { NodeSpec } from '../../core/ssh/config';
import type { Transport } from '../../core/ssh/transport';
import { GpuSessionsError, errorMessage } from '../../core/util/errors';
import { formatBytes } from '../../core/util/format';
import type { Services } from '../services';
import { requireTrust } from '../trust';
import type { Command } from './command';
import { salvageSettings, showSalvageVerdict } from './salvageNode';
import { stopNowOffer } from './drainUi';

type ReleaseOpts = {
  /** Skip the review modal (tests; the MCP tool's `confirm`). */
  assumeYes?: boolean;
  /** Drain timeout in seconds (default: the CLI's 300). */
  drainTimeoutS?: number;
};

/** The argument: a node element or a node name (never asks which then); none: a node picker. Returns `release --json`'s object. */
export const releaseNode: Command = {
  id: 'gpuSessions.releaseNode',
  run: (s, el?: unknown, opts?: ReleaseOpts) => releaseNodeCommand(s, el, opts),
};

async function releaseNodeCommand(s: Services, arg: unknown, opts: ReleaseOpts = {}): Promise<Record<string, unknown> | undefined> {
  const node = await s.resolver.resolve(arg, {
    title: 'Release Node',
    placeHolder: 'Which node do you give back? (its servers leave the gateways, drain, stop; then it is salvaged)',
    nodeElementOnly: true,
  });
  if (!node) return undefined;
  if (!requireTrust('Releasing nodes')) return undefined;
  const settings = await salvageSettings(s, node);
  if (!settings) return undefined;
  const { planRelease, executeRelease, multiNodeWarnings, releaseJson, drainProgressText, DEFAULT_DRAIN_TIMEOUT_S } =
    await import('../../core/flows/release');
  const drainS = opts.drainTimeoutS ?? DEFAULT_DRAIN_TIMEOUT_S;

  const fleetNode = (n: NodeSpec): ReleaseFleetNode => ({ name: n.name, host: n.host, transport: s.transportFor(n) });
  const target = fleetNode(node);
  const others = s.fleet.nodes().filter((n) => n.name !== node.name);
  const asked = others.filter((n) => {
    const st = s.fleet.status(n.name);
    return st.state === 'ok' || st.state === 'probing' || !!st.probe;
  });
  const notAsked = others.filter((n) => !asked.includes(n)).map((n) => n.name);
  const via = asked.map(fleetNode);
  const planning = new AbortController();

  // 1. the plan: one probe per node (cancellable)
  const plan = await planWithProgress(
    s,
    node.name,
    () => planRelease(target, via, planning.signal, { skipUnreachableVia: true }),
    planning,
    via.length,
  );
  if (!plan) return undefined;

  // 2. the review (a modal: this is the user's action)
  const detail = reviewDetail(node.name, plan, { drainS, base: settings.base, notAsked, multiNode: multiNodeWarnings(plan) });
  const go = plan.targets.length ? 'Release' : 'Salvage with Servers Stopped';
  if (!opts.assumeYes) {
    const message = plan.targets.length
      ? `Release ${node.name}? Its servers leave ${plan.targets.length} gateway(s), drain, stop; then it is salvaged.`
      : `No gateway routes to ${node.name}'s servers${via.length ? ` (looked on ${[node.name, ...via.map((v) => v.name)].join(', ')})` : ''}. ` +
        `Go on with the salvage, servers drained and stopped?`;
    const a = await vscode.window.showWarningMessage(message, { modal: true, detail }, go);
    if (a !== go) return undefined;
  }
  s.log.info(`Release ${node.name}:\n${detail}`);

  // 3. the core flow, in a cancellable notification
  const transports = new Map<string, Transport>([
    [target.name, target.transport],
    ...via.map((v) => [v.name, v.transport] as [string, Transport]),
  ]);
  const { Salvager } = await import('../../core/flows/salvage');
  let manifest: SalvageManifest | null = null;
  let salvaging = false;
  const refreshAll = () => {
    for (const n of new Set([node.name, ...plan.targets.map((t) => t.node)])) void s.fleet.refresh(n).catch(() => undefined);
  };
  // its own removals and the rank loss its review predicted are the user's doing: neutral rows, an info
  for (const tg of plan.targets) for (const w of tg.workers) s.live.released.markRemoved(tg.node, w.url, tg.gateway.port);
  // a gateway it leaves with no healthy worker answers 503: the review said so, its "not ready" is expected
  for (const tg of plan.targets)
    if (tg.gateway.port !== null && lastWorkerLines([tg]).length) s.live.released.markEmptied(tg.node, tg.gateway.port, node.name);
  s.live.released.markReleased(node.name);
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Releasing ${node.name}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      // During the drain, Cancel (or the Stop now button) ends the wait: the servers are stopped at once.
      const drain = releaseDrain(node.name, progress, () => ac.abort(), drainProgressText);
      token.onCancellationRequested(() => drain.cancel());
      try {
        const r = await executeRelease(plan, transports, {
          drainTimeoutMs: drainS * 1000,
          signal: ac.signal,
          stopNow: () => drain.stopNow,
          onDrain: (d) => drain.reading(d),
          onProgress: (m) => {
            s.log.info(`Release ${node.name}: ${m}`);
            if (!m.startsWith('Draining :')) progress.report({ message: m });
            if (m.startsWith('Salvaging ')) drain.ended();
          },
          salvage: async (servers) => {
            salvaging = true;
            drain.ended();
            // the servers this salvage stops end by the user's choice: not crash alerts
            for (const sv of servers) s.live.stopped.mark(node.name, sv.port, Date.now(), sv.pid);
            const salvager = new Salvager({
              ...settings,
              servers,
              stopServers: true,
              signal: ac.signal,
              onProgress: (p) =>
                progress.report({
                  message: `salvage: ${p.message} — ${p.filesDone}/${p.filesTotal} files, ${formatBytes(p.bytesDone)} / ${formatBytes(p.bytesTotal)}`,
                }),
            });
            const m = await salvager.run();
            manifest = m ?? null;
            return m ? { verdict: m.verdict, dest: m.dest } : null;
          },
        });
        for (const g of r.gateways) s.log.info(`Release ${node.name}: gateway :${g.port} on ${g.node} removed ${g.removed.join(', ')}`);
        if (manifest) showSalvageVerdict(s, node.name, manifest);
        refreshAll();
        return releaseJson(r);
      } catch (e) {
        refreshAll();
        drain.ended();
        const cancelled = e instanceof GpuSessionsError && e.code === 'cancelled';
        s.log[cancelled ? 'warn' : 'error'](`Release of ${node.name}: ${errorMessage(e)}`);
        if (cancelled && !salvaging) void vscode.window.showWarningMessage(`GPU Sessions: ${errorMessage(e)}`);
        else
          void vscode.window
            .showErrorMessage(
              `GPU Sessions: release of ${node.name} ${cancelled ? 'cancelled during the salvage' : 'failed'}: ${errorMessage(e)}`,
              'Show Log',
            )
            .then((c) => c && vscode.commands.executeCommand('gpuSessions.showLog'));
        return undefined;
      }
    },
  );
}

/** The plan in a cancellable notification; undefined when cancelled (nothing was changed) or when it failed (said). */
async function planWithProgress<P>(
  s: Services,
  name: string,
  plan: () => Promise<P>,
  planning: AbortController,
  viaCount: number,
): Promise<P | undefined> {
  try {
    return await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Release ${name}`, cancellable: true },
      async (progress, token) => {
        token.onCancellationRequested(() => planning.abort());
        progress.report({ message: `looking for gateways on ${viaCount + 1} node(s)…` });
        const r = await plan();
        return planning.signal.aborted ? undefined : r;
      },
    );
  } catch (e) {
    if (planning.signal.aborted) return undefined; // cancelled while looking: nothing was changed
    s.log.error(`Release of ${name}: ${errorMessage(e)}`);
    void vscode.window.showErrorMessage(`GPU Sessions: cannot release ${name}: ${errorMessage(e)}`);
    return undefined;
  }
}

/** The review's detail: the removals, the gateways left empty, the drain and stop, the salvage, what was not asked. */
function reviewDetail(
  name: string,
  plan: { targets: Parameters<typeof routingLines>[0]; servers: Array<{ port: number }>; skipped: Array<{ node: string }> },
  o: { drainS: number; base: string; notAsked: string[]; multiNode: string[] },
): string {
  const ports = plan.servers.map((sv) => ':' + sv.port).join(' ');
  return [
    ...routingLines(plan.targets),
    ...lastWorkerLines(plan.targets).map((l) => `⚠ ${l}`),
    plan.servers.length
      ? `Then drain (up to ${o.drainS} s) and stop ${plan.servers.length} server(s) on ${name}: ${ports}.`
      : `No SGLang server runs on ${name}.`,
    ...o.multiNode,
    `Salvage into ${path.join(o.base, name)}${path.sep}<time>${path.sep} with the servers stopped. The gateways keep running.`,
    ...(plan.skipped.length ? [`Not reachable now (their gateways not looked at): ${plan.skipped.map((x) => x.node).join(', ')}.`] : []),
    ...(o.notAsked.length ? [`Not connected (not asked): ${o.notAsked.join(', ')}.`] : []),
  ].join('\n');
}

/**
 * The release's drain as Stop Server's: a countdown in the progress ("draining :30001 3 running · 272 s
 * left (then stopped) · new requests keep arriving: 5"), a Stop now button, and Cancel during the drain meaning
 * Stop now (the servers are stopped at once); Cancel before it (the removals) cancels the release.
 */
function releaseDrain(node: string, progress: vscode.Progress<{ message?: string }>, abort: () => void, text: typeof drainProgressText) {
  const running = new Map<number, number | null>();
  let lowest: number | null = null;
  let draining = false;
  let over = false;
  const button = stopNowOffer(() => d.cancel());
  const d = {
    stopNow: false,
    reading(r: { port: number; running: number | null; deadline: number }): void {
      if (over) return;
      running.set(r.port, r.running);
      const known = [...running.values()].filter((n): n is number => n !== null);
      const total = known.reduce((a, b) => a + b, 0);
      if (known.length) lowest = lowest === null ? total : Math.min(lowest, total);
      button.start(`GPU Sessions: draining ${node} before its servers stop. They stop when their requests end, or at the deadline.`);
      draining = true;
      if (d.stopNow) return;
      const message = text(running, lowest, r.deadline - Date.now());
      progress.report({ message });
      if (/new requests keep arriving/.test(message))
        button.stuck(
          `GPU Sessions: draining ${node} before its servers stop: new requests keep arriving. Stop now stops them at once; otherwise at the deadline.`,
        );
    },
    cancel(): void {
      if (over || !draining) return abort();
      d.stopNow = true;
      progress.report({ message: 'Stop now: the servers are stopped at once…' });
    },
    ended(): void {
      over = true;
    },
  };
  return d;
}
