/**
 * Waiting for readiness: the readiness line in each log or /health 200, one exec per polling round for all logs.
 */
import { GpuSessionsError } from '../util/errors';
import { checkHealth } from '../sglang/endpoints';
import { classifyLine } from '../sglang/logLines';
import { RemoteOperation, runOperation } from '../remote/operation';
import { shPidLive } from '../remote/pidLive';
import { sectionPrologue, sectionsComplete, splitSections } from '../remote/sections';
import { shq } from '../util/quote';
import { AbortLike, Transport } from '../ssh/transport';
import { RenderedInstance, remotePathExpr } from './profile';
import { READY_TEXT, nonce, sleep } from './launchCommon';

// ------------------------------------------------------------------------------------ waiting

export type InstanceState = 'starting' | 'ready' | 'failed' | 'timeout' | 'not-started';

export interface LaunchedInstance extends RenderedInstance {
  pid: number | null;
  state: InstanceState;
  ready: boolean;
  readyVia: 'log' | 'health' | null;
  readyAfterMs: number | null;
  /** One line: why it failed or is not ready. */
  error: string | null;
  /** The last lines of its log (failed or not ready instances; empty when ready). */
  lastLines: string[];
}

/** Fatal markers: the instance is failing even if its process has not exited yet. */
const FATAL_MARKS = [
  'unrecognized arguments',
  ': error: ',
  'Received sigquit',
  'CUDA out of memory',
  'OutOfMemoryError',
  'address already in use',
  'NCCL error',
  'Fatal Python error',
];

/** The one line that says why an instance failed, from the last lines of its log. */
export function errorSummary(lines: string[]): string | null {
  // argparse: "launch_server.py: error: unrecognized arguments: --bogus-flag"
  for (let i = lines.length - 1; i >= 0; i--) if (/^\S+: error: /.test(lines[i].trim())) return lines[i].trim();
  for (let i = lines.length - 1; i >= 0; i--) {
    const c = classifyLine(lines[i]);
    if (c.kind === 'error') return c.message.trim();
  }
  for (let i = lines.length - 1; i >= 0; i--) {
    if (classifyLine(lines[i]).kind === 'traceback') {
      const after = lines
        .slice(i + 1)
        .map((l) => l.trim())
        .filter(Boolean);
      return after.length ? after[after.length - 1] : lines[i].trim();
    }
  }
  const last = [...lines].reverse().find((l) => l.trim());
  return last ? last.trim() : null;
}

/**
 * The lines worth showing for a failure: from the last traceback / usage line to the end, at most `max`
 * (a longer block keeps its first lines, e.g. "usage: ...", and its end); else the tail.
 */
function errorLines(lines: string[], max = 30): string[] {
  let from = -1;
  for (let i = lines.length - 1; i >= 0; i--) {
    const l = lines[i];
    if (classifyLine(l).kind === 'traceback' || /^usage: /.test(l)) {
      from = i;
      break;
    }
  }
  if (from < 0) return lines.slice(-max);
  const block = lines.slice(from);
  if (block.length <= max) return block;
  const head = 2;
  return [...block.slice(0, head), `… (${block.length - max + 1} lines left out) …`, ...block.slice(block.length - (max - head - 1))];
}

function hasFatal(lines: string[]): boolean {
  return lines.some((l) => FATAL_MARKS.some((m) => l.includes(m)));
}

interface WaitOptions {
  timeoutMs: number;
  pollMs?: number;
  signal?: AbortLike;
  onProgress?: (p: LaunchProgress) => void;
  /** Host the servers listen on (for /health). */
  host?: string;
  /** An instance whose log shows a fatal error while its process lives on counts as failed after this long. Default 10 s. */
  fatalGraceMs?: number;
}

interface PollState {
  alive: boolean;
  readyLine: string;
  tail: string[];
}

export function buildPollScript(n: string, items: Array<{ pid: number; logFile: string }>): string {
  const L = [sectionPrologue(n), 'export LC_ALL=C'];
  items.forEach((it, i) => {
    const log = remotePathExpr(it.logFile);
    L.push(`sec s${i}; st=dead; if ${shPidLive(it.pid)}; then st=alive; fi; echo "$st"`);
    L.push(`sec r${i}; grep -a -F -m1 -e ${shq(READY_TEXT)} ${log} 2>/dev/null | head -c 4096`);
    L.push(`sec t${i}; tail -c 16384 ${log} 2>/dev/null | tail -n 60`);
  });
  L.push('sec end', '');
  return L.join('\n');
}

export function parsePollOutput(text: string, n: string, count: number): PollState[] | null {
  if (!sectionsComplete(text, n)) return null;
  const s = splitSections(text, n);
  const out: PollState[] = [];
  for (let i = 0; i < count; i++) {
    const tail = (s.get(`t${i}`) ?? '').replace(/\n+$/, '');
    out.push({
      alive: (s.get(`s${i}`) ?? '').trim() === 'alive',
      readyLine: (s.get(`r${i}`) ?? '').trim(),
      tail: tail ? tail.split('\n') : [],
    });
  }
  return out;
}

/** One polling round for all instances; a round cut short (no end marker) parses to null: try the next one. */
export function pollOperation(items: Array<{ pid: number; logFile: string }>): RemoteOperation<PollState[] | null> {
  const n = nonce();
  return {
    name: 'launch-poll',
    command: 'sh -s',
    stdin: buildPollScript(n, items),
    timeoutMs: 30_000,
    maxOutputBytes: 4 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => parsePollOutput(r.stdout.toString('utf8'), n, items.length),
  };
}

export interface LaunchProgress {
  phase: 'preflight' | 'upload' | 'start' | 'wait' | 'done';
  message: string;
  ready?: number;
  failed?: number;
  total?: number;
}

/**
 * Poll until every started instance is ready or has failed, or the timeout passes: ONE exec per round for
 * all instances (process state, readiness line, log tail), plus /health for the ones that are up but whose
 * log does not say ready yet.
 */
export async function waitForInstances(t: Transport, instances: LaunchedInstance[], opts: WaitOptions): Promise<LaunchedInstance[]> {
  const started = Date.now();
  const deadline = started + opts.timeoutMs;
  let pollMs = opts.pollMs ?? 1000;
  const fatalSince = new Map<number, number>();
  const pending = () => instances.filter((i) => i.state === 'starting' && i.pid !== null);
  const report = () => {
    const ready = instances.filter((i) => i.state === 'ready').length;
    const failed = instances.filter((i) => i.state === 'failed' || i.state === 'not-started').length;
    opts.onProgress?.({
      phase: 'wait',
      message: `${ready}/${instances.length} ready${failed ? `, ${failed} failed` : ''} (${Math.round((Date.now() - started) / 1000)} s)`,
      ready,
      failed,
      total: instances.length,
    });
  };
  let lastTails = new Map<number, string[]>();
  while (pending().length) {
    const list = pending();
    let states: PollState[] | null = null;
    try {
      states = await runOperation(t, pollOperation(list.map((i) => ({ pid: i.pid!, logFile: i.logFile }))), opts.signal);
    } catch (e) {
      if (e instanceof GpuSessionsError && e.code === 'cancelled') throw e;
      if (Date.now() > deadline) break;
      // a dropped connection: try again next round
    }
    const now = Date.now();
    if (states) {
      lastTails = new Map(list.map((inst, k) => [inst.port, states![k].tail]));
      const needHealth: LaunchedInstance[] = [];
      list.forEach((inst, k) => {
        const st = states![k];
        const readyLine = Boolean(st.readyLine) && classifyLine(st.readyLine).kind === 'ready';
        if (!st.alive) {
          const why = errorSummary(st.tail) ?? 'no output in its log';
          Object.assign(inst, {
            state: 'failed',
            error: `exited ${readyLine ? 'right after it was ready' : 'before it was ready'}: ${why}`,
            lastLines: errorLines(st.tail),
          });
          return;
        }
        if (readyLine) {
          Object.assign(inst, { state: 'ready', ready: true, readyVia: 'log', readyAfterMs: now - started, error: null, lastLines: [] });
          return;
        }
        if (hasFatal(st.tail)) {
          const since = fatalSince.get(inst.port) ?? now;
          fatalSince.set(inst.port, since);
          if (now - since >= (opts.fatalGraceMs ?? 10_000)) {
            Object.assign(inst, {
              state: 'failed',
              error: `error in its log (process ${inst.pid} still running): ${errorSummary(st.tail) ?? ''}`,
              lastLines: errorLines(st.tail),
            });
            return;
          }
        }
        needHealth.push(inst);
      });
      await Promise.all(
        needHealth.map(async (inst) => {
          try {
            const h = await checkHealth(t, inst.host ?? opts.host ?? '127.0.0.1', inst.port, 3000);
            if (h.health === 'healthy')
              Object.assign(inst, {
                state: 'ready',
                ready: true,
                readyVia: 'health',
                readyAfterMs: Date.now() - started,
                error: null,
                lastLines: [],
              });
          } catch {
            /* the SSH connection itself: next round */
          }
        }),
      );
    }
    report();
    if (!pending().length) break;
    if (Date.now() + pollMs > deadline) {
      if (Date.now() >= deadline) break;
      await sleep(Math.max(0, deadline - Date.now()), opts.signal);
      continue;
    }
    await sleep(pollMs, opts.signal);
    if (Date.now() - started > 30_000) pollMs = Math.max(pollMs, Math.min(3000, (opts.pollMs ?? 1000) * 2));
  }
  for (const inst of pending()) {
    const tail = lastTails.get(inst.port) ?? [];
    Object.assign(inst, {
      state: 'timeout',
      error:
        `not ready after ${Math.round(opts.timeoutMs / 1000)} s (still starting; process ${inst.pid} left ` +
        `running)${tail.length ? `; last line: ${tail[tail.length - 1].trim()}` : ''}`,
      lastLines: tail.slice(-30),
    });
  }
  return instances;
}
