/**
 * End the rental when the work is safe (`gpu-sessions end-rental`, MCP `end_rental`):
 *   1. read the latest salvage of NODE under DEST: its verdict must be `safe` (endCheck.ts);
 *   2. probe and list the node now, before any provider command (runpodctl's first run writes its own config):
 *      nothing new or grown under the salvaged folders, no writer, the same servers, the same boot;
 *   3. run exactly ONE provider action on the node with the node's own scoped key (actions.ts; the user's own
 *      provider key never goes to the node), reading the provider's status in the same exec;
 *   4. verify: the provider's status says stopped or gone AND a fresh SSH connection no longer gets in, within the
 *      verify timeout. A call that "succeeded" while the status stays running is not verified, never "ended".
 * Refusals (exit 5) name each reason; --dry-run ends nothing and says the exact command that would run.
 */
import { runOperation } from '../remote/operation';
import { type ProbeResult, probeOperation } from '../node/probe';
import { salvageListOperation } from '../salvage/plan/listing';
import { isLoopback } from '../util/net';
import type { Transport } from '../ssh/transport';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { actionCommand, endOperation, statusOperation } from '../provider/actions';
import { type ProviderAction, type ProviderInfo, type ProviderName, shutdownCaveat } from '../provider/detect';
import { type LatestSalvage, type Refusal, latestSalvage, providerRefusal, salvagedRoots, staleness, verdictRefusals } from './endCheck';
import { type InstanceStatus, actionVerified } from '../provider/status';

export const DEFAULT_VERIFY_TIMEOUT_S = 180;

interface EndRentalOptions {
  node: string;
  transport: Transport;
  /** A transport on a new connection (does SSH still let anyone in?); the flow disposes it after each try. */
  freshTransport: () => Transport;
  /** The salvage base folder (DEST/<node>/<timestamp>/), as `salvage` and `release` use it. */
  dest: string;
  action: ProviderAction;
  dryRun?: boolean;
  verifyTimeoutMs?: number;
  /** Between verification tries (default 2 s). */
  pollMs?: number;
  /** Asked after every check passed and before the one provider call; false ends nothing. */
  confirm?: (command: string, provider: ProviderInfo) => Promise<boolean>;
  onProgress?: (message: string) => void;
  signal?: AbortSignal;
  /**
   * The provider's status read on this machine with the user's own key (actions.ts localStatusOperation), for when
   * the node no longer answers; null: no key or CLI here. Never runs anything on the node.
   */
  localStatus?: (p: ProviderInfo & { instanceId: string }) => Promise<InstanceStatus | null>;
}

type EndOutcome = 'refused' | 'dry-run' | 'declined' | 'ended' | 'not-verified';

export interface EndRentalResult {
  node: string;
  provider: ProviderName | null;
  action: ProviderAction;
  instanceId: string | null;
  /** When the salvage verdict this rests on was reached. */
  verdictAt: string | null;
  /** When the provider's status first said stopped or gone (null: it never did). */
  endedAt: string | null;
  verified: boolean;
  evidence: string[];
  outcome: EndOutcome;
  reasons: Refusal[];
  /** The exact command run (or, with --dry-run, that would run) on the node. */
  command: string | null;
  salvage: string | null;
}

/** The CLI's exit code for a result: 0 ended and verified (or a dry run), 5 refused, 1 otherwise. */
export function endRentalExitCode(r: EndRentalResult): number {
  return r.outcome === 'ended' || r.outcome === 'dry-run' ? 0 : r.outcome === 'refused' ? 5 : 1;
}

/** The JSON of `end-rental --json` and of MCP `end_rental`. */
export function endRentalJson(r: EndRentalResult): Record<string, unknown> {
  return {
    node: r.node,
    provider: r.provider,
    action: r.action,
    instanceId: r.instanceId,
    verdictAt: r.verdictAt,
    endedAt: r.endedAt,
    verified: r.verified,
    evidence: r.evidence,
    outcome: r.outcome,
    reasons: r.reasons.map((x) => ({ code: x.code, message: x.message })),
    command: r.command,
    salvage: r.salvage,
  };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function endRental(o: EndRentalOptions): Promise<EndRentalResult> {
  const say = o.onProgress ?? (() => undefined);
  const s = latestSalvage(o.dest, o.node);
  const r: EndRentalResult = {
    node: o.node,
    provider: null,
    action: o.action,
    instanceId: null,
    verdictAt: s?.manifest.finishedAt ?? null,
    endedAt: null,
    verified: false,
    evidence: [],
    outcome: 'refused',
    reasons: verdictRefusals(o.node, o.dest, s, o.action),
    command: null,
    salvage: s?.dir ?? null,
  };
  // 2. the node now, before any provider command
  say(`Checking ${o.node} against its salvage verdict…`);
  const { probe, stale, compared } = await nodeNow(o, s);
  const p = probe.provider;
  r.provider = p?.name ?? 'unknown';
  r.instanceId = p?.instanceId ?? null;
  if (p) r.evidence.push(...p.evidence.map((e) => `detected: ${e}`));
  if (stale) r.reasons.push(stale);
  else if (compared !== null)
    r.evidence.push(`nothing changed since the verdict of ${s?.manifest.finishedAt}: ${compared} file(s) compared, same servers and boot`);
  const noAction = providerRefusal(p, o.action);
  if (noAction) r.reasons.push(noAction);
  if (r.reasons.length || !p) return r;
  const target = { ...p, instanceId: p.instanceId };
  r.command =
    o.action === 'shutdown'
      ? actionCommand({ ...p, instanceId: '' }, 'shutdown')
      : actionCommand({ ...target, instanceId: p.instanceId ?? '' }, o.action);
  if (o.action === 'shutdown') r.evidence.push(shutdownCaveat(p.name));
  if (o.dryRun) {
    r.outcome = 'dry-run';
    return r;
  }
  if (o.confirm) {
    if (!(await o.confirm(r.command, p))) {
      r.outcome = 'declined';
      r.evidence.push('declined at the confirmation: nothing was ended');
      return r;
    }
    // a person may have taken a while to answer: the verdict must still hold now
    const again = await nodeNow(o, s);
    if (again.stale) {
      r.reasons.push(again.stale);
      return r;
    }
  }
  if (o.signal?.aborted) throw new GpuSessionsError('cancelled', 'Cancelled before the provider call: nothing was ended.');
  // 3. the one provider call
  say(`Running on ${o.node}: ${r.command}`);
  let status: InstanceStatus | null = null;
  try {
    const call = await runOperation(o.transport, endOperation(target, o.action));
    r.evidence.push(
      `${p.name} answered (exit ${call.code ?? '?'}): ${call.said.split('\n').slice(0, 3).join(' ').slice(0, 300) || '(nothing)'}`,
    );
    status = call.status;
  } catch (e) {
    r.evidence.push(`the provider call's answer was lost (${errorMessage(e)}); verifying what happened`);
  }
  await verify(o, r, p, status);
  r.outcome = r.verified ? 'ended' : 'not-verified';
  return r;
}

/** The probe and, with a safe verdict, the listing of the salvaged folders compared with it (no provider command). */
async function nodeNow(
  o: EndRentalOptions,
  s: LatestSalvage | null,
): Promise<{ probe: ProbeResult; stale: Refusal | null; compared: number | null }> {
  const probe = await runOperation(o.transport, probeOperation(o.node, { artifacts: false }), o.signal);
  if (!s || s.manifest.verdict !== 'safe') return { probe, stale: null, compared: null };
  const local = isLoopback(String(o.transport.describe().host ?? '')) || o.transport.describe().transport === 'local';
  const L = await runOperation(
    o.transport,
    salvageListOperation({
      roots: salvagedRoots(s.manifest),
      previousModelDirs: (s.manifest as { modelDirs?: string[] }).modelDirs ?? [],
      exclude: [o.dest],
      excludePids: local ? [process.pid] : [],
    }),
    o.signal,
  );
  return { probe, stale: staleness(s, probe, L), compared: L.files.length };
}

/** 4. Until the verify timeout: the provider's own status (on the node while it answers) and a fresh SSH attempt. */
async function verify(o: EndRentalOptions, r: EndRentalResult, p: ProviderInfo, first: InstanceStatus | null): Promise<void> {
  const say = o.onProgress ?? (() => undefined);
  const timeoutMs = o.verifyTimeoutMs ?? DEFAULT_VERIFY_TIMEOUT_S * 1000;
  const deadline = Date.now() + timeoutMs;
  const withStatus = o.action !== 'shutdown' && p.instanceId !== null && (p.name === 'runpod' || p.name === 'vast');
  const action = o.action === 'shutdown' ? null : o.action;
  let statusOk = !withStatus;
  if (!withStatus) r.evidence.push(`${p.name} has no status the node can read for a shutdown: SSH going away is the only evidence`);
  let lastWord: string | null = null;
  const seen = (st: InstanceStatus, where: string) => {
    if (st.word !== lastWord) r.evidence.push(`${p.name} status ${where}: ${st.word ?? 'unreadable'} (${st.state})`);
    lastWord = st.word;
    if (action && actionVerified(action, st)) {
      statusOk = true;
      r.endedAt = new Date().toISOString();
    }
  };
  if (first) seen(first, 'right after the call');
  let sshGone = false;
  let sshGoneAt: string | null = null;
  let nodeAnswers = true;
  for (;;) {
    if (!statusOk && nodeAnswers && withStatus) {
      try {
        seen(await runOperation(o.transport, statusOperation({ ...p, instanceId: p.instanceId! }), o.signal), 'read on the node');
      } catch (e) {
        nodeAnswers = false;
        r.evidence.push(`the node no longer runs commands (${errorMessage(e).slice(0, 160)}); its status cannot be read there`);
      }
    }
    if (!statusOk && !nodeAnswers && withStatus && o.localStatus) {
      const st = await o.localStatus({ ...p, instanceId: p.instanceId! }).catch(() => null);
      if (st) seen(st, 'read here with your own key');
    }
    if (!sshGone && (sshGone = await sshRefused(o, r))) sshGoneAt = new Date().toISOString();
    if ((statusOk && sshGone) || Date.now() >= deadline || o.signal?.aborted) break;
    say(
      `Waiting for ${statusOk ? 'SSH to stop answering' : `${p.name} to report the instance ${o.action === 'terminate' ? 'gone' : 'stopped'}`}…`,
    );
    await sleep(Math.min(o.pollMs ?? 2000, Math.max(0, deadline - Date.now())));
  }
  if (!statusOk && withStatus)
    r.evidence.push(
      `${p.name} never reported the instance ${o.action === 'terminate' ? 'gone' : 'stopped or gone'} within ${timeoutMs / 1000} s` +
        (lastWord ? ` (last status: ${lastWord})` : ''),
    );
  if (!sshGone) r.evidence.push('SSH still lets a new session in: the node is still up');
  r.verified = statusOk && sshGone;
  // a shutdown has no provider status: its end is when SSH stopped letting anyone in
  if (r.verified && !withStatus && !r.endedAt) r.endedAt = sshGoneAt;
}

/** True when a new SSH connection can no longer run a command (refused, reset, timed out); host-key trouble is not that. */
async function sshRefused(o: EndRentalOptions, r: EndRentalResult): Promise<boolean> {
  const t = o.freshTransport();
  try {
    await runOperation(t, { name: 'ssh-answers', command: 'true', timeoutMs: 15_000, maxOutputBytes: 1024, parse: () => true }, o.signal);
    return false;
  } catch (e) {
    if (e instanceof GpuSessionsError && e.code.startsWith('host-key')) {
      r.evidence.push(`a new connection met a host-key problem (${e.message.slice(0, 120)}): not counted as ended`);
      return false;
    }
    r.evidence.push(`SSH stopped answering at ${new Date().toISOString()} (${errorMessage(e).slice(0, 160)})`);
    return true;
  } finally {
    t.dispose();
  }
}
