/**
 * The provider's own word on an instance, parsed from the CLIs' real outputs (providers.md §1.2, §2.2):
 * `runpodctl pod get ID` (v2 JSON), `runpodctl get pod ID -a` (legacy tab table), `vastai show instance ID --raw`.
 * Exit statuses are not trusted: both CLIs exit 0 on failures, so only the status words decide.
 */
export type InstanceState = 'running' | 'stopped' | 'terminated' | 'unknown';

export interface InstanceStatus {
  state: InstanceState;
  /** The provider's own word ("EXITED", "stopped", "gone"). */
  word: string | null;
  pricePerHour: number | null;
  /** Contract end (Vast `end_date`), ISO; null where the provider has none. */
  endsAt: string | null;
}

const none = (word: string | null = null): InstanceStatus => ({ state: 'unknown', word, pricePerHour: null, endsAt: null });

function runpodState(w: string): InstanceState {
  const u = w.toUpperCase();
  if (u === 'EXITED') return 'stopped';
  if (u === 'TERMINATED') return 'terminated';
  if (u === 'RUNNING' || u === 'PROVISIONING' || u === 'STARTING') return 'running';
  return 'unknown';
}

/** `runpodctl pod get ID` (v2): JSON on stdout; a deleted pod is a 404 error on stderr, exit 1. */
export function parseRunpodPodGet(stdout: string, stderr: string, code: number | null): InstanceStatus {
  const t = stdout.trim();
  if (t.startsWith('{')) {
    try {
      const j = JSON.parse(t) as Record<string, unknown>;
      const w = typeof j.desiredStatus === 'string' ? j.desiredStatus : typeof j.status === 'string' ? j.status : null;
      const price = typeof j.costPerHr === 'number' && Number.isFinite(j.costPerHr) ? j.costPerHr : null;
      if (w) return { state: runpodState(w), word: w.slice(0, 40), pricePerHour: price, endsAt: null };
    } catch {
      return none();
    }
  }
  if (code !== 0 && /status 404|not found/i.test(stderr))
    return { state: 'terminated', word: 'gone (404)', pricePerHour: null, endsAt: null };
  return none();
}

/** True when `runpodctl pod ...` is an unknown command (a 1.x runpodctl): fall back to the legacy spellings. */
export function runpodV2Missing(stdout: string, stderr: string): boolean {
  return /unknown command "pod"/i.test(stdout + stderr);
}

/** `runpodctl get pod ID -a` (legacy): tab-separated table; a pod that is gone is absent (header only). */
export function parseRunpodLegacyTable(stdout: string, id: string): InstanceStatus {
  const rows = stdout.split('\n').map((l) => l.split('\t').map((c) => c.trim()));
  const head = rows[0];
  if (!head || head[0] !== 'ID') return none();
  const si = head.indexOf('STATUS');
  const pi = head.indexOf('$/HR');
  const row = rows.slice(1).find((r) => r[0] === id);
  if (!row) return { state: 'terminated', word: 'gone (not listed)', pricePerHour: null, endsAt: null };
  const w = si >= 0 ? (row[si] ?? '') : '';
  const p = pi >= 0 ? Number(row[pi]) : NaN;
  return {
    state: runpodState(w),
    word: w.slice(0, 40) || null,
    pricePerHour: Number.isFinite(p) && row[pi] !== '' ? p : null,
    endsAt: null,
  };
}

/** `vastai show instance ID --raw`: JSON; `{"instances": null}` when gone (exit 0). */
export function parseVastShowInstance(stdout: string): InstanceStatus {
  let j: Record<string, unknown>;
  try {
    j = JSON.parse(stdout.trim()) as Record<string, unknown>;
  } catch {
    return none();
  }
  if (!j || typeof j !== 'object') return none();
  if ('instances' in j && j.instances === null) return { state: 'terminated', word: 'gone', pricePerHour: null, endsAt: null };
  if (j.error === true) return none(typeof j.msg === 'string' ? j.msg.slice(0, 120) : 'error');
  const actual = typeof j.actual_status === 'string' ? j.actual_status : null;
  const cur = typeof j.cur_state === 'string' ? j.cur_state : null;
  const price = typeof j.dph_total === 'number' && Number.isFinite(j.dph_total) ? j.dph_total : null;
  const end =
    typeof j.end_date === 'number' && Number.isFinite(j.end_date) && j.end_date > 0 ? new Date(j.end_date * 1000).toISOString() : null;
  let state: InstanceState = 'unknown';
  if (cur === 'unloaded') state = 'terminated';
  else if (actual === 'stopped') state = 'stopped';
  else if (actual && ['running', 'loading', 'frozen', 'rebooting', 'created'].includes(actual)) state = 'running';
  return { state, word: (actual ?? cur ?? '').slice(0, 40) || null, pricePerHour: price, endsAt: end };
}

/** Does `state` satisfy the action? A stop is verified by stopped or gone; a terminate only by gone. */
export function actionVerified(action: 'stop' | 'terminate', s: InstanceStatus): boolean {
  return action === 'stop' ? s.state === 'stopped' || s.state === 'terminated' : s.state === 'terminated';
}
