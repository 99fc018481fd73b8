/**
 * The live guard's states and failure classes in plain words, for people (alerts read "crashed (crash)",
 * "gpu-lost (gpu)", "deadline-near — the rental ended 1 min ago"). The machine names stay in JSON and the CLI's
 * --json output; these are for rows and notifications.
 */
import type { FailureClass } from '../sglang/logLines';

const CLASS_WORDS: Record<FailureClass, string> = {
  crash: 'crashed',
  oom: 'crashed: out of GPU memory',
  'kv-pressure': 'KV cache nearly full',
  hang: 'hung (no progress)',
  nccl: 'crashed: NCCL (GPU communication) error',
  gpu: 'crashed: GPU error',
  'pd-transfer': 'KV transfer between prefill and decode failed',
};

/** "crashed: out of GPU memory", "stalled (no progress)", "GPU lost", "rental ends soon"… */
export function plainState(to: string, cls?: string | null, message = ''): string {
  if (to === 'crashed') return (cls && CLASS_WORDS[cls as FailureClass]) || 'crashed';
  switch (to) {
    case 'stalled':
      return cls === 'hang' ? 'hung (no progress)' : 'stalled (no progress)';
    case 'unhealthy':
      return 'not answering its health check';
    case 'gpu-lost':
      return 'GPU lost';
    case 'unreachable':
      return 'not reachable';
    case 'disk-full':
      return 'disk almost full';
    case 'kv-pressure':
      return 'KV cache nearly full';
    case 'dp-imbalance':
      return 'data-parallel ranks unbalanced';
    case 'accept-drop':
      return 'speculative acceptance dropped';
    case 'rank-lost':
      return 'lost a node of its multi-node server';
    case 'done':
      return 'job finished';
    case 'deadline-near':
      return /ended/.test(message) ? 'rental ended' : 'rental ends soon';
    case 'rental-ended':
      return 'rental ended';
    case 'job-overrun':
      return 'the job ends after the rental';
    default:
      return to.replace(/-/g, ' ');
  }
}

/** Whether a transition is an error (a red notification) rather than a warning: something stopped working. */
export function isErrorState(to: string, cls?: string | null): boolean {
  return to === 'crashed' || to === 'gpu-lost' || to === 'rank-lost' || cls === 'oom' || cls === 'nccl' || cls === 'gpu';
}
