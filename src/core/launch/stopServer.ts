/**
 * Stop: find the server by port, optionally drain (running requests to 0), then SIGTERM its process group, SIGKILL after a timeout.
 */
import { authHeaders, fetchMetrics, httpGet } from '../sglang/endpoints';
import { classifyLine } from '../sglang/logLines';
import { RemoteOperation, runOperation } from '../remote/operation';
import { shPidLive } from '../remote/pidLive';
import { nodeScript } from '../util/nodeScripts';
import { shq } from '../util/quote';
import { AbortLike, ExecResult, Transport } from '../ssh/transport';
import { sleep } from './launchCommon';
import { scanServers } from './serverScan';
import { SglangServer, httpPortOf } from '../sglang/serverArgv';

// ------------------------------------------------------------------------------------ stop

interface StopOptions {
  port: number;
  /** Stop only if the server on the port has this pid. */
  pid?: number;
  /** Wait for running requests to reach 0 first. */
  drain?: boolean;
  /** Give up draining after this long (the server is then NOT stopped, unless stopAfterDrainTimeout). Default 10 min. */
  drainTimeoutMs?: number;
  /** At the drain deadline stop the server anyway (SIGTERM) instead of leaving it running. */
  stopAfterDrainTimeout?: boolean;
  /** Polled while draining: true ends the drain and stops the server now ("Stop now"). */
  stopNow?: () => boolean;
  /** SIGKILL when SIGTERM has not ended the process after this long. Default 30 s. */
  termTimeoutMs?: number;
  /** Drain from the log: no new decode line for this long counts as idle (an idle server prints none). Default 15 s. */
  quietMs?: number;
  pollMs?: number;
  signal?: AbortLike;
  onProgress?: (message: string) => void;
}

type DrainSource = 'metrics' | 'get_load' | 'log';

export interface StopResult {
  port: number;
  pid: number | null;
  found: boolean;
  /** The process is gone. */
  stopped: boolean;
  /** The last signal sent. */
  signal: 'SIGTERM' | 'SIGKILL' | null;
  /** The whole process group was signalled (the server leads its own group). */
  group: boolean;
  drain: { source: DrainSource | null; waitedMs: number; drained: boolean; lastRunning: number | null } | null;
  durationMs: number;
  message: string;
}

interface LogDrainState {
  lastDecode: string | null;
  quietSince: number;
}

/**
 * Running requests from the latest decode line of a log: its `#running-req`, or 0 once no new decode line
 * has appeared for quietMs (an idle scheduler prints none, so the last line keeps its last non-zero count).
 */
export function logDrainReading(line: string, state: LogDrainState, now: number, quietMs: number): number | null {
  if (line !== state.lastDecode) {
    state.lastDecode = line;
    state.quietSince = now;
  }
  const running = line ? (classifyLine(line).stat?.runningReqs ?? null) : null;
  if (running === 0) return 0;
  if (now - state.quietSince >= quietMs) return 0;
  return running ?? (line ? null : 1);
}

/** The latest decode line (with `#running-req`) in the last 2 MiB of a server's log; '' when there is none. */
export function lastDecodeLineOperation(logFile: string): RemoteOperation<string> {
  return {
    name: 'last-decode-line',
    command: `tail -c 2097152 ${shq(logFile)} 2>/dev/null | grep -a -F -e '#running-req' | grep -a -F -e 'Decode' | tail -n 1`,
    timeoutMs: 20_000,
    maxOutputBytes: 4 * 1024 * 1024,
    idempotent: true,
    parse: (r) => r.stdout.toString('utf8').trim(),
  };
}

/** Running + queued requests now, from the first source that answers; null when none does (release drains with it). */
export async function loadNow(
  t: Transport,
  srv: SglangServer,
  state: { source: DrainSource | null; lastDecode: string | null; quietSince: number },
  quietMs: number,
): Promise<number | null> {
  const httpPort = httpPortOf(srv);
  const tryMetrics = async (): Promise<number | null> => {
    if (httpPort === null) return null;
    // an answer over METRICS_MAX_BYTES has no summary: a cut exposition could read 0 running requests
    const m = (await fetchMetrics(t, srv.host, httpPort, { timeoutMs: 5000, headers: authHeaders(srv) })).summary;
    if (!m || m.runningReqs === null) return null;
    return m.runningReqs + (m.queueReqs ?? 0);
  };
  const tryLoad = async (): Promise<number | null> => {
    if (httpPort === null) return null;
    const r = await httpGet(t, srv.host, httpPort, '/get_load', { timeoutMs: 5000, maxBytes: 1024 * 1024, headers: authHeaders(srv) });
    if (r.status !== 200) return null;
    const v = JSON.parse(r.body) as unknown;
    const ranks = Array.isArray(v) ? v : [v];
    let sum = 0;
    let any = false;
    for (const x of ranks) {
      if (x && typeof x === 'object') {
        const o = x as Record<string, unknown>;
        for (const k of ['num_reqs', 'num_waiting_reqs'])
          if (typeof o[k] === 'number') {
            sum += o[k] as number;
            any = true;
          }
      }
    }
    return any ? sum : null;
  };
  const tryLog = async (): Promise<number | null> => {
    if (!srv.logFile) return null;
    const line = await runOperation(t, lastDecodeLineOperation(srv.logFile));
    return logDrainReading(line, state, Date.now(), quietMs);
  };
  const order: Array<[DrainSource, () => Promise<number | null>]> = [
    ['metrics', tryMetrics],
    ['get_load', tryLoad],
    ['log', tryLog],
  ];
  const candidates = state.source
    ? order.filter(([s]) => s === state.source)
    : srv.enableMetrics
      ? order
      : order.filter(([s]) => s !== 'metrics');
  for (const [source, fn] of candidates) {
    try {
      const v = await fn();
      if (v !== null) {
        state.source = source;
        return v;
      }
    } catch {
      /* next source */
    }
  }
  return null;
}

export function buildKillScript(pid: number, opts: { group: boolean; descendants: number[]; termTimeoutMs: number }): string {
  const target = opts.group ? `-${pid}` : String(pid);
  const killAll = opts.group ? `-${pid}` : [pid, ...opts.descendants].join(' ');
  const rounds = Math.max(1, Math.ceil(opts.termTimeoutMs / 200));
  const descendants = !opts.group && opts.descendants.length ? opts.descendants.join(' ') : '';
  const header = [
    `alive() { ${shPidLive(pid)}; }`,
    `gs_target=${shq(target)}`,
    `gs_kill_all=${shq(killAll)}`,
    `gs_descendants=${shq(descendants)}`,
    `gs_rounds=${rounds}`,
  ];
  return `${header.join('\n')}\n${nodeScript('launch/kill.sh')}`;
}

interface KillOutcome {
  /** Why kill itself failed (`GS-KILL-FAILED <why>`); null when it could signal. */
  failed: string | null;
  /** The process was gone before anything was sent. */
  goneBefore: boolean;
  /** SIGTERM was not enough: SIGKILL was sent. */
  killed: boolean;
  /** The process is gone now. */
  gone: boolean;
}

/** The markers buildKillScript prints. */
export function parseKillOutput(r: ExecResult): KillOutcome {
  const out = r.stdout.toString('utf8');
  const failed = /GS-KILL-FAILED ?(.*)/.exec(out);
  return {
    failed: failed ? failed[1].trim() || 'kill failed' : null,
    goneBefore: /GS-GONE-BEFORE/.test(out),
    killed: /GS-KILLED/.test(out),
    gone: /GS-GONE/.test(out),
  };
}

/** SIGTERM (the group), wait up to termTimeoutMs, SIGKILL. Not idempotent: never retried on a dropped connection. */
function killOperation(pid: number, opts: { group: boolean; descendants: number[]; termTimeoutMs: number }): RemoteOperation<KillOutcome> {
  return {
    name: 'kill',
    command: 'sh -s',
    stdin: buildKillScript(pid, opts),
    timeoutMs: opts.termTimeoutMs + 30_000,
    maxOutputBytes: 1024 * 1024,
    parse: parseKillOutput,
  };
}

function descendantsOf(pid: number, procs: Map<number, { ppid: number }>): number[] {
  const out: number[] = [];
  const kids = new Map<number, number[]>();
  for (const [p, v] of procs) {
    const l = kids.get(v.ppid) ?? [];
    l.push(p);
    kids.set(v.ppid, l);
  }
  const stack = [...(kids.get(pid) ?? [])];
  while (stack.length && out.length < 4096) {
    const p = stack.pop()!;
    if (out.includes(p)) continue;
    out.push(p);
    stack.push(...(kids.get(p) ?? []));
  }
  return out;
}

/**
 * Stop the SGLang server listening on `port`: optionally drain first (running + queued requests reach 0,
 * read from /metrics when it was launched with --enable-metrics, else /get_load, else its log), then SIGTERM
 * its process group (or the process alone when it shares a group with others), wait, SIGKILL after
 * termTimeoutMs. A drain that times out leaves the server running.
 */
export async function stopServer(t: Transport, opts: StopOptions): Promise<StopResult> {
  const started = Date.now();
  const say = (m: string) => opts.onProgress?.(m);
  say(`looking for the server on port ${opts.port}…`);
  const scan = await scanServers(t, opts.signal);
  const srv = scan.servers.find((s) => s.port === opts.port && (opts.pid === undefined || s.pid === opts.pid));
  const result = (r: Partial<StopResult> & { message: string }): StopResult => ({
    port: opts.port,
    pid: srv?.pid ?? null,
    found: Boolean(srv),
    stopped: false,
    signal: null,
    group: false,
    drain: null,
    durationMs: Date.now() - started,
    ...r,
  });
  if (!srv) {
    const other = scan.servers.find((s) => s.port === opts.port);
    const listening = scan.servers.length ? ` (servers on ${scan.servers.map((s) => s.port).join(', ')})` : '';
    return result({
      message: other
        ? `The server on port ${opts.port} of ${t.label} has pid ${other.pid}, not ${opts.pid}; nothing stopped.`
        : `No SGLang server listens on port ${opts.port} of ${t.label}${listening}.`,
    });
  }
  if (scan.ownUid !== null && srv.uid !== null && scan.ownUid !== 0 && srv.uid !== scan.ownUid) {
    return result({
      message: `The server on port ${opts.port} (pid ${srv.pid}) belongs to another user (uid ${srv.uid}); it cannot be stopped from this account.`,
    });
  }

  let drain: StopResult['drain'] = null;
  if (opts.drain) {
    const state = { source: null as DrainSource | null, lastDecode: null as string | null, quietSince: Date.now() };
    const dStart = Date.now();
    const deadline = dStart + (opts.drainTimeoutMs ?? 10 * 60_000);
    let zeros = 0;
    let last: number | null = null;
    let drained = false;
    for (;;) {
      last = await loadNow(t, srv, state, opts.quietMs ?? 15_000);
      if (last === 0) zeros++;
      else zeros = 0;
      const load = last === null ? 'load unknown' : `${last} running request${last === 1 ? '' : 's'}`;
      const sourceName = state.source === 'get_load' ? '/get_load' : state.source === 'metrics' ? '/metrics' : 'its log';
      say(`draining port ${opts.port}: ${load}${state.source ? ` (from ${sourceName})` : ''}`);
      if (zeros >= 2 || (last === 0 && state.source === 'log')) {
        drained = true;
        break;
      }
      if (last === null && state.source === null) {
        // No source at all (no metrics, /get_load, nor log): the process may be gone already.
        const again = await scanServers(t, opts.signal);
        if (!again.servers.some((s) => s.pid === srv.pid)) {
          drained = true;
          break;
        }
      }
      if (Date.now() >= deadline || opts.stopNow?.()) break;
      await sleep(Math.min(opts.pollMs ?? 1000, Math.max(0, deadline - Date.now())), opts.signal);
    }
    drain = { source: state.source, waitedMs: Date.now() - dStart, drained, lastRunning: last };
    if (!drained && (opts.stopNow?.() || opts.stopAfterDrainTimeout))
      say(`port ${opts.port}: ${last ?? 'an unknown number of'} request(s) still running; stopping it anyway`);
    else if (!drained) {
      return result({
        drain,
        message:
          `Port ${opts.port} still had ${last ?? 'an unknown number of'} running request(s) after ${Math.round(drain.waitedMs / 1000)} ` +
          `s of draining; the server was NOT stopped.`,
      });
    }
  }

  const group = srv.pgid === srv.pid;
  const termTimeoutMs = opts.termTimeoutMs ?? 30_000;
  say(`stopping pid ${srv.pid} on port ${opts.port} (SIGTERM${group ? ' to its process group' : ''})…`);
  const k = await runOperation(
    t,
    killOperation(srv.pid, { group, descendants: group ? [] : descendantsOf(srv.pid, scan.procs), termTimeoutMs }),
    opts.signal,
  );
  if (k.failed !== null) return result({ drain, group, message: `Could not signal pid ${srv.pid} on ${t.label}: ${k.failed}` });
  const { gone, killed } = k;
  const sig: StopResult['signal'] = k.goneBefore ? null : killed ? 'SIGKILL' : 'SIGTERM';
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  const afterTerm = killed ? ` after it ignored SIGTERM for ${Math.round(termTimeoutMs / 1000)} s` : '';
  const afterDrain = drain ? ` after draining for ${(drain.waitedMs / 1000).toFixed(1)} s` : '';
  const toGroup = group ? ', its process group' : '';
  const msg = !gone
    ? `pid ${srv.pid} on port ${opts.port} is still alive after SIGTERM and SIGKILL.`
    : sig === null
      ? `The server on port ${opts.port} (pid ${srv.pid}) had already exited.`
      : `Stopped the server on port ${opts.port} (pid ${srv.pid}${toGroup}) with ${sig}${afterTerm}${afterDrain} (${secs} s in all).`;
  return result({ drain, group, stopped: gone, signal: sig, message: msg, durationMs: Date.now() - started });
}
