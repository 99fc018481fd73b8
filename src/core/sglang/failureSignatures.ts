/**
 * Failure signatures of SGLang log lines (2025 and 2026 builds, up to v0.5.18): which class of failure a
 * message shows, whether the process is going down with it, a soft (diagnostic) watchdog, and the exit code a
 * line names. The lines behind each signature, verbatim with their public source, are in
 * test/fixtures/log/failures-2026.txt (see shared/reference/sglang-2026-fidelity.md, section 4).
 *
 * Classes: crash (scheduler/detokenizer exception, a child process that died, the SIGQUIT handler), oom (CUDA /
 * NPU / HIP out of memory, not enough memory for the KV pool), kv-pressure (KV pool full, retractions, KV
 * allocation failures), hang (scheduler/detokenizer watchdog, detokenizer health-check failures), nccl (NCCL /
 * HCCL errors, collective timeouts), gpu (illegal memory access, device-side assert, ROCm memory access fault,
 * driver/NVML failures), pd-transfer (a PD disaggregation KV transfer that failed: the request is lost, the
 * server lives).
 *
 * Never a failure: torch's own `[W…]` / `[I…]` log lines (e.g. the teardown warning
 * `ProcessGroupNCCL.cpp:1624] Warning: WARNING: destroy_process_group() was not called before program exit`),
 * which are printed while a server stops and would otherwise relabel the real cause of a crash.
 *
 * Pure, linear, never throws; imports nothing from vscode.
 */

export type FailureClass = 'crash' | 'oom' | 'kv-pressure' | 'hang' | 'nccl' | 'gpu' | 'pd-transfer';

export interface FailureDetail {
  cls: FailureClass;
  /**
   * The server process is going down with this line: a crash, oom, nccl or gpu failure; a hard watchdog
   * (`…watchdog timeout (…, self.soft=False)`, which SIGQUITs the server 5 s later); a KV allocation
   * RuntimeError (`Prefill out of memory. Try to lower your batch size.`, raised in the scheduler).
   */
  fatal: boolean;
  /** A watchdog line: true for `self.soft=True` (a diagnostic; the process stays), false for a hard one. */
  soft?: boolean;
  /** The exit code a line names (`crashed with exit code -6`, `failed with an exit code 131`), else absent. */
  exitCode?: number;
}

/** Checked first, in order: a line that matches one is of that class (or none), whatever else it contains. */
const FIRST: Array<[string, FailureClass | null]> = [
  // torch's teardown warning (sglang#36081): not an NCCL failure
  ['destroy_process_group() was not called', null],
  // the subprocess-liveness /health precondition of 2026 builds: the subprocess died (crash), not a hang
  ['Health check failed: subprocess', 'crash'],
  // "Process group watchdog thread terminated with exception: CUDA error: an illegal memory access" (sglang#8296)
  ['illegal memory access', 'gpu'],
];

/** Signatures per class, checked in this order (the most specific first: an OOM inside a scheduler exception
 *  is an oom; a c10::DistBackendError after "terminate called" is nccl). Substrings, as SGLang prints them. */
const SIGNATURES: Array<[FailureClass, string[]]> = [
  [
    'oom',
    [
      'CUDA out of memory',
      'OutOfMemoryError',
      'CUDA error: out of memory',
      'NPU out of memory',
      'HIP out of memory',
      'Not enough memory. Please try to increase --mem-fraction-static',
      'Not enough memory',
    ],
  ],
  [
    'kv-pressure',
    [
      'KV cache pool is full',
      'Decode out of memory happened',
      'No space left for only one request',
      // KV allocation RuntimeErrors (sglang#34676, #4602, #10408)
      'out of memory. Try to lower your batch size',
      'alloc_req_slots runs out of memory',
    ],
  ],
  [
    'nccl',
    [
      'NCCL error',
      'ProcessGroupNCCL',
      'Watchdog caught collective operation timeout',
      'DistBackendError',
      'NCCL WARN',
      'ncclInternalError',
      'ncclSystemError',
      'ncclUnhandledCudaError',
      'ncclRemoteError',
      // Ascend's NCCL (vllm-project/vllm-ascend#13934)
      'HcclException',
    ],
  ],
  [
    'gpu',
    [
      'Found no NVIDIA driver',
      'Unable to determine the device handle',
      'GPU is lost',
      'Failed to initialize NVML',
      "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver",
      'uncorrectable ECC error',
      'CUDA error: unspecified launch failure',
      'device-side assert triggered',
      // ROCm (ROCm/legacy-rocm-build#5051, MI300 + SGLang)
      'Memory access fault by GPU node',
    ],
  ],
  // PD disaggregation (sglang#12688, kvcache-ai/Mooncake#851): the request's KV transfer failed
  ['pd-transfer', ['KVTransferError', 'transfer failed for request']],
  [
    'hang',
    [
      'Watchdog timeout',
      'watchdog timeout (',
      'Pyspy failed to dump',
      'Pyspy failed (py-spy dump',
      'All pyspy dump attempts failed',
      'Health check failed',
      "couldn't get a response from detokenizer",
    ],
  ],
  [
    'crash',
    [
      'hit an exception',
      'Received sigquit from a child proces',
      // v0.5.18's SIGQUIT handler (sglang#36081)
      'SIGQUIT received.',
      'No live scheduler processes found',
      // the subprocess watchdog (sglang PR #18582)
      ') crashed with exit code',
      'Child process unexpectedly failed',
      'scheduler is dead',
      'Fatal Python error',
      'Segmentation fault',
      'terminate called after throwing',
    ],
  ],
];

const FATAL_CLASSES: ReadonlySet<FailureClass> = new Set<FailureClass>(['crash', 'oom', 'nccl', 'gpu']);

/** At most this much of a message is searched (a long line's head carries its signature). */
const MAX_SCAN = 8192;

/**
 * A torch (c10) log line of level W or I: `[W823 09:11:05.020988021 ProcessGroupNCCL.cpp:1624] …`, possibly
 * after a `[rankN]:` prefix. Torch's E/F lines (`[E909 …] … Watchdog caught collective operation timeout`) are
 * failures and do not match.
 */
export function isTorchNotice(m: string): boolean {
  let i = 0;
  if (m.startsWith('[rank')) {
    const e = m.indexOf(']:', 5);
    if (e < 0 || e > 16) return false;
    i = e + 2;
  }
  if (m.charCodeAt(i) !== 91 /* [ */) return false;
  const lv = m[i + 1];
  if (lv !== 'W' && lv !== 'I') return false;
  let j = i + 2;
  const d0 = j;
  while (j < m.length && j - d0 < 5 && m.charCodeAt(j) >= 48 && m.charCodeAt(j) <= 57) j++;
  // MDD / MMDD (torch pads no month: "W823") then " HH:MM:SS"
  return j - d0 >= 3 && j - d0 <= 4 && m[j] === ' ' && /^\d\d:\d\d:\d\d/.test(m.slice(j + 1, j + 9));
}

function exitCodeOf(m: string): number | undefined {
  for (const mark of ['with exit code ', 'with an exit code ', '(exit code ']) {
    const i = m.indexOf(mark);
    if (i < 0) continue;
    const r = /^-?\d{1,4}/.exec(m.slice(i + mark.length, i + mark.length + 6));
    if (r) return Number(r[0]);
  }
  return undefined;
}

/** The failure a log message (a line without its header) shows, or null. Never throws; linear. */
export function failureOf(message: string): FailureDetail | null {
  if (typeof message !== 'string' || message.length === 0) return null;
  const m = message.length > MAX_SCAN ? message.slice(0, MAX_SCAN) : message;
  if (isTorchNotice(m)) return null;
  let cls: FailureClass | null | undefined;
  for (const [mark, c] of FIRST)
    if (m.indexOf(mark) >= 0) {
      cls = c;
      break;
    }
  if (cls === undefined)
    outer: for (const [c, marks] of SIGNATURES)
      for (const mark of marks)
        if (m.indexOf(mark) >= 0) {
          cls = c;
          break outer;
        }
  if (!cls) return null;
  const d: FailureDetail = { cls, fatal: FATAL_CLASSES.has(cls) };
  if (cls === 'hang' && (m.indexOf('watchdog timeout (') >= 0 || m.indexOf('Watchdog timeout (') >= 0)) {
    // 2026: "Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)" — a hard watchdog SIGQUITs
    // the server; soft=True only dumps diagnostics. 2025 ("Watchdog timeout (self.watchdog_timeout=300)")
    // names no flag: judged a hang until the process is seen to go.
    if (m.indexOf('soft=True') >= 0) d.soft = true;
    else if (m.indexOf('soft=False') >= 0) {
      d.soft = false;
      d.fatal = true;
    }
  }
  if (cls === 'kv-pressure' && (m.indexOf('Try to lower your batch size') >= 0 || m.indexOf('alloc_req_slots') >= 0)) d.fatal = true;
  const code = exitCodeOf(m);
  if (code !== undefined) d.exitCode = code;
  return d;
}

/** The failure class of a log message (a line without its header), or null. Never throws; linear. */
export function classifyFailure(message: string): FailureClass | null {
  return failureOf(message)?.cls ?? null;
}

const SIGNALS: Record<number, string> = {
  1: 'SIGHUP',
  2: 'SIGINT',
  3: 'SIGQUIT',
  4: 'SIGILL',
  6: 'SIGABRT',
  7: 'SIGBUS',
  8: 'SIGFPE',
  9: 'SIGKILL',
  11: 'SIGSEGV',
  15: 'SIGTERM',
};

/**
 * An exit code in words, as Python's multiprocessing reports it: negative = killed by that signal (-9 SIGKILL,
 * often the kernel's OOM killer; -6 SIGABRT, a C++ abort), 128+N from a shell = signal N.
 */
export function describeExitCode(code: number): string {
  const sig = code < 0 ? -code : code > 128 && code < 160 ? code - 128 : 0;
  const name = SIGNALS[sig];
  if (!name) return `exit code ${code}`;
  const why = sig === 9 ? ', often the out-of-memory killer' : sig === 6 ? ', an abort (C++ exception or assertion)' : '';
  return `exit code ${code} (${name}${why})`;
}
