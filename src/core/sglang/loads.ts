/**
 * Throughput and queue of an SGLang server that prints no stat lines (`--log-level warning`, or a PD prefill
 * node, whose Prefill lines say nothing of decode) and has no `--enable-metrics`: from `/v1/loads` (2026
 * builds; per DP rank `num_running_reqs`, `num_waiting_reqs`, `gen_throughput`, `token_usage`) or, on older
 * builds, `/server_info` (`internal_states[i].last_gen_throughput`, computed by the scheduler whatever its log
 * level: metrics_reporter.py sets it before `if self.is_stats_logging_rank: logger.info(msg)`). Neither needs
 * `--enable-metrics`.
 *
 * The `/v1/loads` body is read tolerantly (an object with a `loads` array, or the array itself; `num_reqs` as
 * an older spelling of the running count): its full 2026 shape could not be confirmed from SGLang's source
 * (UNVERIFIED); a field that is absent stays null.
 *
 * No vscode import.
 */
import { MetricsSummary, authHeaders, fetchServerInfo, httpGet } from './endpoints';
import { SglangServer, httpPortOf, serverApiKey } from './serverArgv';
import type { Transport } from '../ssh/transport';

/** A MetricsSummary built from /v1/loads or /server_info (the fields those do not carry are null). */
type LoadsSummary = MetricsSummary & { source: '/v1/loads' | '/server_info' };

function num(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : null;
}

function sumOf(xs: Array<number | null>): number | null {
  const ok = xs.filter((x): x is number => x !== null);
  return ok.length ? ok.reduce((a, b) => a + b, 0) : null;
}

function empty(source: LoadsSummary['source']): LoadsSummary {
  return {
    genThroughput: null,
    runningReqs: null,
    queueReqs: null,
    tokenUsage: null,
    maxTokenUsage: null,
    specAcceptLength: null,
    retractedReqs: null,
    promptTokensTotal: null,
    generationTokensTotal: null,
    source,
  };
}

/** `/v1/loads` JSON → summed figures over DP ranks; null when the body is not a loads answer. Never throws. */
export function parseLoads(body: string): LoadsSummary | null {
  let v: unknown;
  try {
    v = JSON.parse(body);
  } catch {
    return null;
  }
  const arr = Array.isArray(v) ? v : v && typeof v === 'object' ? (v as { loads?: unknown }).loads : null;
  if (!Array.isArray(arr) || arr.length === 0 || arr.length > 4096) return null;
  const ranks = arr.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object' && !Array.isArray(x));
  if (!ranks.length) return null;
  const s = empty('/v1/loads');
  s.genThroughput = sumOf(ranks.map((r) => num(r.gen_throughput)));
  s.runningReqs = sumOf(ranks.map((r) => num(r.num_running_reqs) ?? num(r.num_reqs)));
  s.queueReqs = sumOf(ranks.map((r) => num(r.num_waiting_reqs)));
  const usage = ranks.map((r) => num(r.token_usage)).filter((x): x is number => x !== null);
  if (usage.length) {
    s.tokenUsage = usage.reduce((a, b) => a + b, 0) / usage.length;
    s.maxTokenUsage = Math.max(...usage);
  }
  const accept = ranks
    .map((r) => num(r.spec_accept_length) ?? num(r.avg_spec_accept_length))
    .filter((x): x is number => x !== null && x > 0);
  if (accept.length) s.specAcceptLength = accept.reduce((a, b) => a + b, 0) / accept.length;
  return s.genThroughput === null && s.runningReqs === null ? null : s;
}

/** `/server_info` (already parsed) → the throughput its `internal_states[]` carry (one per DP rank), or null. */
export function serverInfoLoads(info: Record<string, unknown> | null): LoadsSummary | null {
  const states = info?.internal_states;
  if (!Array.isArray(states) || states.length === 0) return null;
  const ok = states.filter((x): x is Record<string, unknown> => !!x && typeof x === 'object');
  const s = empty('/server_info');
  s.genThroughput = sumOf(ok.map((r) => num(r.last_gen_throughput)));
  const accept = ok.map((r) => num(r.avg_spec_accept_length)).filter((x): x is number => x !== null && x > 0);
  if (accept.length) s.specAcceptLength = accept.reduce((a, b) => a + b, 0) / accept.length;
  return s.genThroughput === null ? null : s;
}

/**
 * Polls a server's load without `--enable-metrics`: `/v1/loads` first, then `/server_info` (older builds).
 * Null when neither answers with figures. Problems of the connection are swallowed (the next poll retries).
 */
export async function fetchLoads(t: Transport, s: SglangServer): Promise<LoadsSummary | null> {
  const port = httpPortOf(s);
  if (port === null) return null;
  try {
    const r = await httpGet(t, s.host, port, '/v1/loads', { timeoutMs: 5000, maxBytes: 1024 * 1024, headers: authHeaders(s) });
    const l = r.status === 200 ? parseLoads(r.body) : null;
    if (l) return l;
    const info = await fetchServerInfo(t, s.host, port, { timeoutMs: 5000, apiKey: serverApiKey(s) });
    return serverInfoLoads(info.info);
  } catch {
    return null;
  }
}

/** A server whose log carries no decode stat lines: `--log-level warning` (or above), or a PD prefill node. */
export function lacksDecodeLines(s: SglangServer): boolean {
  return s.statLines === false || s.flags['disaggregation-mode'] === 'prefill';
}
