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
import type { ReleaseFleetNode } from '../../core/flows/release';
import { routingLines } from '../../core/gateway/rotation';
import type { SalvageManifest } from '../../core/flows/salvage';
import type { NodeSpec } from '../../core/ssh/config';
import type { Transport } from '../../core/ssh/transport';
import { GpuSessionsError, errorMessage } from '../../core/util/errors';
import { formatBytes } from '../../core/util/format';
import type { Services } from '../services';
import { requireTrust } from '../trust';
import type { Command } from './command';
import { salvageSettings, showSalvageVerdict } from './salvageNode';

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
  const { planRelease, executeRelease, multiNodeWarnings, releaseJson, DEFAULT_DRAIN_TIMEOUT_S } = await import('../../core/flows/release');
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

  // 1. the plan: one probe per node (cancellable)
  let plan: Awaited<ReturnType<typeof planRelease>>;
  const planning = new AbortController();
  try {
    const p = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `Release ${node.name}`, cancellable: true },
      async (progress, token) => {
        const ac = planning;
        token.onCancellationRequested(() => ac.abort());
        progress.report({ message: `looking for gateways on ${via.length + 1} node(s)…` });
        const r = await planRelease(target, via, ac.signal, { skipUnreachableVia: true });
        return ac.signal.aborted ? undefined : r;
      },
    );
    if (!p) return undefined;
    plan = p;
  } catch (e) {
    if (planning.signal.aborted) return undefined; // cancelled while looking: nothing was changed
    s.log.error(`Release of ${node.name}: ${errorMessage(e)}`);
    void vscode.window.showErrorMessage(`GPU Sessions: cannot release ${node.name}: ${errorMessage(e)}`);
    return undefined;
  }

  // 2. the review (a modal: this is the user's action)
  const ports = plan.servers.map((sv) => ':' + sv.port).join(' ');
  const detail = [
    ...routingLines(plan.targets),
    plan.servers.length
      ? `Then drain (up to ${drainS} s) and stop ${plan.servers.length} server(s) on ${node.name}: ${ports}.`
      : `No SGLang server runs on ${node.name}.`,
    ...multiNodeWarnings(plan),
    `Salvage into ${path.join(settings.base, node.name)}${path.sep}<time>${path.sep} with the servers stopped. The gateways keep running.`,
    ...(plan.skipped.length ? [`Not reachable now (their gateways not looked at): ${plan.skipped.map((x) => x.node).join(', ')}.`] : []),
    ...(notAsked.length ? [`Not connected (not asked): ${notAsked.join(', ')}.`] : []),
  ].join('\n');
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
  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Releasing ${node.name}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      try {
        const r = await executeRelease(plan, transports, {
          drainTimeoutMs: drainS * 1000,
          signal: ac.signal,
          onProgress: (m) => {
            s.log.info(`Release ${node.name}: ${m}`);
            progress.report({ message: m });
          },
          salvage: async (servers) => {
            salvaging = true;
            // the servers this salvage stops end by the user's choice: not crash alerts (issue 30)
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
