/**
 * Classification of SGLang log lines (ready, startup, error, traceback, access) and stat-record helpers.
 */
import { failureOf, isTorchNotice } from './failureSignatures';
import { ClassifiedLine, LineKind, StatRecord } from './logTypes';
import { LEVEL_SOURCE_SERVER_ARGS, isDigit, parseHeaderBefore, skipWrappers } from './logHeader';
import { POOL_USAGE_KEYS, cleanLine, parseStatFrom } from './statLine';

// ---------------------------------------------------------------------------------------------------------
// Classification of the other lines

const READY_MARK = 'The server is fired up and ready to roll';

const STARTUP_MARKS = [
  'Load weight',
  'KV Cache is allocated',
  'Capture cuda graph',
  // 2026 (sglang PR #28937): `Capture target decode|prefill|verify CUDA graph begin. …` / `… end. elapsed=…`
  'Capture target ',
  'Capture piecewise CUDA graph',
  'Using KV cache dtype',
  'Capture npu graph',
  'Capture cpu graph',
  'max_total_num_tokens=',
  'Started server process',
  'Waiting for application startup',
  'Application startup complete',
  'Uvicorn running on',
  'Init torch distributed',
  'Memory pool end',
  'server_args=ServerArgs(',
  'Loading safetensors checkpoint shards',
];

/** Error markers that contain "rror" (checked only when the message does). */
const ERROR_MARKS_RROR = [
  'OutOfMemoryError',
  'RuntimeError',
  'CUDA error',
  'NCCL error',
  'ncclInternalError',
  'ncclSystemError',
  'ncclUnhandledCudaError',
  'ncclRemoteError',
  'Fatal Python error',
];

/** Other error markers. */
const ERROR_MARKS_OTHER = ['CUDA out of memory', 'NCCL WARN', '[ERROR]', ' ERROR ', 'Segmentation fault', 'Received sigquit'];

/** uvicorn access line: `INFO:     127.0.0.1:40052 - "POST /v1/chat/completions HTTP/1.1" 200 OK` */
function isAccessMessage(m: string): boolean {
  if (!m.startsWith('INFO:')) return false;
  const q = m.indexOf(' - "');
  if (q < 0 || q > 200) return false;
  const h = m.indexOf(' HTTP/', q);
  return h > 0 && h - q < 8192;
}

/** Message starts with an exception class name: "ValueError: ...", "torch.OutOfMemoryError: ...", "AssertionError". */
function startsWithExceptionName(m: string): boolean {
  const n = Math.min(m.length, 160);
  let j = 0;
  for (; j < n; j++) {
    const c = m.charCodeAt(j);
    const word = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || isDigit(c) || c === 95 || c === 46;
    if (!word) break;
  }
  if (j === 0) return false;
  if (j < m.length) {
    const c = m.charCodeAt(j);
    // "ValueError: x", "AssertionError", "Exception in thread ..."
    if (c !== 58 /* : */ && c !== 32) return false;
  }
  const name = m.slice(0, j);
  return name.endsWith('Error') || name.endsWith('Exception') || name === 'KeyboardInterrupt';
}

/**
 * "...: ValueError: x" / "[rank0]: KeyError: 'y'" — an exception class name followed by ": " anywhere in the
 * message (the name must start with an upper-case letter, so "import error: " does not count).
 */
function containsExceptionName(m: string): boolean {
  for (const suffix of ['Error: ', 'Exception: ']) {
    let i = m.indexOf(suffix);
    let guard = 0;
    while (i > 0 && guard++ < 16) {
      // walk back over the identifier (letters, digits, '_', '.') to its first letter
      let k = i;
      while (k > 0 && k > i - 80) {
        const c = m.charCodeAt(k - 1);
        if ((c >= 65 && c <= 90) || (c >= 97 && c <= 122) || isDigit(c) || c === 95 || c === 46) k--;
        else break;
      }
      // module path "torch.distributed.DistBackendError": judge the last component
      let first = k;
      for (let d = i - 1; d >= k; d--) {
        if (m.charCodeAt(d) === 46) {
          first = d + 1;
          break;
        }
      }
      const c0 = m.charCodeAt(first);
      if (first < i && c0 >= 65 && c0 <= 90) return true;
      i = m.indexOf(suffix, i + suffix.length);
    }
  }
  return false;
}

function isErrorMessage(m: string): boolean {
  if (startsWithExceptionName(m)) return true;
  if (m.startsWith('ERROR') || m.startsWith('CRITICAL') || m === 'Killed') return true;
  for (const mark of ERROR_MARKS_OTHER) if (m.indexOf(mark) >= 0) return true;
  const hasRror = m.indexOf('rror') >= 0;
  if (hasRror) for (const mark of ERROR_MARKS_RROR) if (m.indexOf(mark) >= 0) return true;
  return (hasRror || m.indexOf('Exception: ') >= 0) && containsExceptionName(m);
}

/**
 * The one restart detector: a classified line that starts a new server process ("Started server process
 * [pid]"); the figures and readiness of the previous process no longer count.
 */
export function isRestartLine(c: ClassifiedLine): boolean {
  return c.kind === 'startup' && c.message.indexOf('Started server process') >= 0;
}

/**
 * The first line of a new launch (`server_args=ServerArgs(…)`, printed before the weights load) or its uvicorn
 * start: lines before it belong to an earlier process (a restart into the same log re-read the old
 * traceback; `--enable-http2` runs Granian and prints no `Started server process`).
 */
export function isLaunchBoundaryLine(c: ClassifiedLine): boolean {
  return isRestartLine(c) || (c.kind === 'startup' && c.message.indexOf('server_args=ServerArgs(') >= 0);
}

/**
 * SGLang's graceful stop (tokenizer manager's SIGTERM handler): `SIGTERM received. signum=None frame=None.
 * Draining requests and shutting down...`; /health answers 503 while it drains, the process exits 0 after.
 */
export function isDrainLine(line: string): boolean {
  const i = line.indexOf('SIGTERM received');
  return i >= 0 && line.indexOf('Draining requests', i) > 0;
}

/** Classify one log line. Never throws. */
export function classifyLine(line: string): ClassifiedLine {
  try {
    if (typeof line !== 'string') return { kind: 'other', message: '' };
    const s = cleanLine(line);
    const st = parseStatFrom(s);
    if (st) {
      const c: ClassifiedLine = { kind: st.stat.kind, stat: st.stat, message: s.slice(st.msgStart) };
      if (isKvPressureStat(st.stat)) c.errorClass = 'kv-pressure';
      return c;
    }
    const message = s.slice(skipWrappers(s, 0));
    const kind = classifyMessage(message);
    if (kind !== 'error') return { kind, message };
    const failure = failureOf(message);
    return failure ? { kind, message, errorClass: failure.cls, failure } : { kind, message, errorClass: null };
  } catch {
    return { kind: 'other', message: typeof line === 'string' ? line : '' };
  }
}

function classifyMessage(m: string): LineKind {
  if (m.length === 0) return 'other';
  if (isAccessMessage(m)) return 'access';
  if (m.startsWith('server_args=') || LEVEL_SOURCE_SERVER_ARGS.test(m.slice(0, 120))) return 'startup';
  if (isTorchNotice(m)) return 'other';
  if (failureOf(m) !== null) return 'error';
  if (m.indexOf('Traceback (most recent call last)') >= 0) return 'traceback';
  if (m.indexOf(READY_MARK) >= 0) return 'ready';
  if (isErrorMessage(m)) return 'error';
  for (const mark of STARTUP_MARKS) if (m.indexOf(mark) >= 0) return 'startup';
  return 'other';
}

/** The highest KV pool usage a stat line reports (plain `token usage` and every pool), or null. */
function maxPoolUsage(st: StatRecord): number | null {
  let m = st.tokenUsage;
  for (const k of POOL_USAGE_KEYS) {
    const v = st.extra[k];
    if (typeof v === 'number' && Number.isFinite(v) && (m === null || v > m)) m = v;
  }
  return m;
}

/** Retracted requests (`#retracted-req`) on a stat line, 0 when absent. */
function retractedReqs(st: StatRecord): number {
  const v = st.extra['#retracted-req'] ?? st.extra['#retracted_req'];
  return typeof v === 'number' && Number.isFinite(v) ? v : 0;
}

/** A stat line showing KV pressure: requests retracted, or a pool printed as full (1.00). */
export function isKvPressureStat(st: StatRecord): boolean {
  if (retractedReqs(st) > 0) return true;
  const u = maxPoolUsage(st);
  return u !== null && u >= 0.995;
}

/** Timestamp and rank tags of any log line (stat or not), e.g. for an error line. Never throws. */
export function lineHeader(line: string): { time: string | null; ranks: Record<string, number>; rank: string } {
  try {
    const s = cleanLine(line);
    const h = parseHeaderBefore(s, skipWrappers(s, 0));
    return { time: h.time, ranks: h.ranks ?? {}, rank: h.label ?? '' };
  } catch {
    return { time: null, ranks: {}, rank: '' };
  }
}
