/**
 * HTTP to a server on the node (SGLang's /health, /server_info, /metrics) through the pooled SSH
 * connection: the socket is a direct-tcpip channel from `Transport.connectTcp`, driven by node:http.
 * No local port is opened. Bodies are bounded, every request has a deadline.
 */
import * as http from 'node:http';
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { GpuSessionsError, errorMessage } from '../util/errors';
import type { Transport } from '../ssh/transport';
import { serverApiKey } from './serverArgv';

interface HttpResult {
  status: number;
  headers: Record<string, string>;
  body: string;
  durationMs: number;
  /** The body was longer than maxBytes and was cut there. */
  truncated?: boolean;
}

interface HttpGetOptions {
  /** Deadline for connecting and the whole response. Default 10 s. */
  timeoutMs?: number;
  /** Body bytes kept; the rest is discarded (and the connection closed). Default 8 MiB. */
  maxBytes?: number;
  /** Extra request headers (e.g. `Authorization` for a server launched with --api-key). */
  headers?: Record<string, string>;
  /** Default GET; a gateway's worker management also needs POST and DELETE (core/gateway/client.ts). */
  method?: 'GET' | 'POST' | 'DELETE';
  /** Request body (JSON), sent with its content-length. */
  body?: string;
}

/**
 * The address to connect to for a server that listens on `host`: a wildcard listen address
 * (0.0.0.0, ::, empty) is reached on loopback; brackets around IPv6 literals are removed.
 */
/** `Authorization: Bearer <key>` for a server launched with --api-key (the key stays in memory), else none. */
export function authHeaders(s: { pid: number; args: readonly string[] }): Record<string, string> {
  const key = serverApiKey(s);
  return key ? { Authorization: `Bearer ${key}` } : {};
}

export function reachableHost(host: string | null | undefined): string {
  let h = (host ?? '').trim();
  if (h.startsWith('[') && h.endsWith(']')) h = h.slice(1, -1);
  if (h === '' || h === '0.0.0.0' || h === '*') return '127.0.0.1';
  if (h === '::' || h === '0:0:0:0:0:0:0:0') return '::1';
  return h;
}

function hostHeader(host: string, port: number): string {
  return `${host.includes(':') ? `[${host}]` : host}:${port}`;
}

function isRefused(e: unknown): boolean {
  const code = (e as { code?: string }).code;
  return code === 'ECONNREFUSED' || /refused/i.test(errorMessage(e));
}

/**
 * Close the request's socket so that everything hanging off it can be collected. A net.Socket is simply
 * destroyed. An ssh2 channel's destroy() is not a stream destroy: it only sends CHANNEL_CLOSE. When we stop
 * reading mid-response (body over maxBytes, deadline), node:http has paused the channel with up to a window
 * (~1-2 MiB) of the body still buffered, so the channel never emits 'end', ssh2 never emits 'close', and
 * node:http never frees its HTTP parser. The parser is a native object held by a global handle; it keeps the
 * channel, the request, the response and every chunk read so far alive: ~10 MB per poll of a large /metrics
 * (finding f3). Destroying the stream itself drops the buffer and refuses further data (the peer is then held
 * by the SSH window); ssh2 then emits 'close' as soon as the far end's CHANNEL_CLOSE arrives.
 */
function release(sock: Duplex): void {
  sock.destroy();
  if (!sock.destroyed) Duplex.prototype.destroy.call(sock);
}

/** GET http://host:port/path as seen from the node. Rejects with GpuSessionsError ('timeout', 'remote-failed'). */
export async function httpGet(t: Transport, host: string, port: number, path: string, opts: HttpGetOptions = {}): Promise<HttpResult> {
  const target = reachableHost(host);
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const maxBytes = Math.max(0, opts.maxBytes ?? 8 * 1024 * 1024);
  const url = `http://${hostHeader(target, port)}${path}`;
  const method = opts.method ?? 'GET';
  const started = Date.now();
  const timeoutError = () =>
    new GpuSessionsError(
      'timeout',
      `${method} ${url} on ${t.label}: no answer within ${(timeoutMs / 1000).toFixed(timeoutMs % 1000 ? 1 : 0)} s.`,
      { url },
    );

  // 1. The channel, under the same deadline.
  let sock: Duplex;
  {
    let timer: NodeJS.Timeout | undefined;
    let timedOut = false;
    const connecting = t.connectTcp(target, port);
    try {
      sock = await Promise.race([
        connecting,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => {
            timedOut = true;
            reject(timeoutError());
          }, timeoutMs);
        }),
      ]);
    } catch (e) {
      if (timedOut)
        connecting.then(
          (s) => release(s),
          () => undefined,
        );
      if (e instanceof GpuSessionsError) {
        if (e.code === 'remote-failed' && isRefused(e))
          throw new GpuSessionsError('remote-failed', e.message, { ...e.detail, refused: true, url });
        throw e;
      }
      throw new GpuSessionsError('remote-failed', `${method} ${url} on ${t.label}: ${errorMessage(e)}`, { refused: isRefused(e), url });
    } finally {
      if (timer) clearTimeout(timer);
    }
  }

  // 2. The request over it.
  return new Promise<HttpResult>((resolve, reject) => {
    let done = false;
    const finish = (err: Error | null, res?: HttpResult) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      release(sock);
      if (err) reject(err);
      else resolve(res!);
    };
    const timer = setTimeout(
      () => {
        req.destroy();
        finish(timeoutError());
      },
      Math.max(1, timeoutMs - (Date.now() - started)),
    );
    sock.on('error', () => undefined); // reported through the request
    const req = http.request(
      {
        host: target,
        port,
        path,
        method,
        headers: {
          Host: hostHeader(target, port),
          Accept: '*/*',
          Connection: 'close',
          'User-Agent': 'gpu-sessions',
          ...(opts.body !== undefined
            ? { 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(opts.body)) }
            : {}),
          ...(opts.headers ?? {}),
        },
        createConnection: () => sock as unknown as Socket,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        let truncated = false;
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) {
          if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
        }
        const result = () => ({
          status: res.statusCode ?? 0,
          headers,
          body: Buffer.concat(chunks).toString('utf8'),
          durationMs: Date.now() - started,
          ...(truncated ? { truncated } : {}),
        });
        res.on('data', (b: Buffer) => {
          if (done) return;
          if (size + b.length > maxBytes) {
            chunks.push(b.subarray(0, maxBytes - size));
            size = maxBytes;
            truncated = true;
            finish(null, result());
            res.destroy();
            return;
          }
          chunks.push(b);
          size += b.length;
        });
        res.on('end', () => finish(null, result()));
        res.on('aborted', () =>
          finish(new GpuSessionsError('remote-failed', `${method} ${url} on ${t.label}: the connection closed mid-response.`, { url })),
        );
        res.on('error', (e) => finish(new GpuSessionsError('remote-failed', `${method} ${url} on ${t.label}: ${e.message}`, { url })));
      },
    );
    req.on('error', (e) =>
      finish(new GpuSessionsError('remote-failed', `${method} ${url} on ${t.label}: ${e.message}`, { url, refused: isRefused(e) })),
    );
    req.end(opts.body);
  });
}

// ------------------------------------------------------------------------------------ SGLang

export type Health = 'healthy' | 'starting' | 'busy' | 'unhealthy' | 'dead';

/** SGLang answers /health with 503 after about 20 s without a health generation: slower than this is unhealthy. */
const HEALTH_UNHEALTHY_MS = 20_000;

/**
 * /health of an SGLang server: 200 healthy; 503 starting (or stopping/unhealthy: SGLang answers 503 for
 * both — the caller, knowing whether the server was ready, tells them apart); no answer within a deadline
 * shorter than 20 s → busy (newer builds run a 1-token generation for /health, slow under load); no answer
 * within 20 s (HEALTH_UNHEALTHY_MS) or more → unhealthy, as SGLang itself judges it;
 * connection refused or reset → dead. Problems of the SSH connection itself (node unreachable, host key)
 * are thrown: they say nothing about the server.
 */
export async function checkHealth(
  t: Transport,
  host: string,
  port: number,
  timeoutMs = 10_000,
  opts: { path?: '/health' | '/health_generate'; limitMs?: number } = {},
): Promise<{ health: Health; detail: string }> {
  // the server's own limit (SGLANG_HEALTH_CHECK_TIMEOUT, read from its environment by the probe), default 20 s
  const limitMs = opts.limitMs ?? HEALTH_UNHEALTHY_MS;
  const path = opts.path ?? '/health';
  try {
    const r = await httpGet(t, host, port, path, { timeoutMs, maxBytes: 64 * 1024 });
    if (r.status >= 200 && r.status < 300) return { health: 'healthy', detail: `HTTP ${r.status} in ${r.durationMs} ms` };
    if (r.status === 503) return { health: 'starting', detail: 'HTTP 503: starting up, shutting down, or failing its health generation' };
    return { health: 'dead', detail: `unexpected HTTP ${r.status} from /health${r.body ? `: ${r.body.slice(0, 200)}` : ''}` };
  } catch (e) {
    if (e instanceof GpuSessionsError && e.code === 'timeout') {
      if (timeoutMs >= limitMs)
        return {
          health: 'unhealthy',
          detail: `no answer within ${Math.round(timeoutMs / 1000)} s (SGLang gives up on its health generation after ${Math.round(limitMs / 1000)} s)`,
        };
      return {
        health: 'busy',
        detail: `no answer within ${Math.round(timeoutMs / 100) / 10} s (under load /health runs a generation; not dead)`,
      };
    }
    if (e instanceof GpuSessionsError && e.code === 'remote-failed') {
      if (e.detail?.refused || isRefused(e)) return { health: 'dead', detail: `connection refused on ${reachableHost(host)}:${port}` };
      if (/socket hang up|ECONNRESET|closed mid-response/i.test(e.message))
        return { health: 'dead', detail: `connection closed: ${e.message}` };
    }
    throw e;
  }
}

/** Server info and why it is missing, for reports. */
export async function fetchServerInfo(
  t: Transport,
  host: string,
  port: number,
  opts: { timeoutMs?: number; apiKey?: string } = {},
): Promise<{ info: Record<string, unknown> | null; path: string | null; error: string | null }> {
  const headers: Record<string, string> = opts.apiKey ? { Authorization: `Bearer ${opts.apiKey}` } : {};
  let lastError: string | null = null;
  for (const path of ['/server_info', '/get_server_info']) {
    let r: HttpResult;
    try {
      r = await httpGet(t, host, port, path, { timeoutMs: opts.timeoutMs ?? 15_000, maxBytes: 16 * 1024 * 1024, headers });
    } catch (e) {
      return { info: null, path: null, error: errorMessage(e) };
    }
    if (r.status === 404) {
      lastError = `${path}: HTTP 404`;
      continue;
    }
    if (r.status !== 200)
      return { info: null, path, error: `${path}: HTTP ${r.status}${r.status === 401 ? ' (the server was launched with --api-key)' : ''}` };
    if (r.truncated) return { info: null, path, error: `${path}: the answer exceeded 16 MiB` };
    try {
      const v = JSON.parse(r.body) as unknown;
      if (v && typeof v === 'object' && !Array.isArray(v)) return { info: v as Record<string, unknown>, path, error: null };
      return { info: null, path, error: `${path}: not a JSON object` };
    } catch {
      return { info: null, path, error: `${path}: not JSON` };
    }
  }
  return { info: null, path: null, error: lastError };
}

/** /server_info (2026 builds), falling back to /get_server_info on 404. Null when neither answers. */
export async function getServerInfo(
  t: Transport,
  host: string,
  port: number,
  opts: { timeoutMs?: number; apiKey?: string } = {},
): Promise<Record<string, unknown> | null> {
  return (await fetchServerInfo(t, host, port, opts)).info;
}

// ------------------------------------------------------------------------------------ /metrics

interface MetricsSample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const METRIC_NAME = /^[A-Za-z_:][A-Za-z0-9_:]*$/;

function promNumber(v: string | undefined): number | null {
  if (v === undefined) return null;
  const s = v.trim();
  if (s === '') return null;
  if (/^\+?Inf$/i.test(s)) return Infinity;
  if (/^-Inf$/i.test(s)) return -Infinity;
  if (/^NaN$/i.test(s)) return NaN;
  const n = Number(s);
  return Number.isNaN(n) ? null : n;
}

/**
 * Prometheus text → flat samples, one per line of the exposition (histogram buckets as `NAME_bucket` with
 * their `le` label, `_sum`, `_count`, counters' `_total` / `_created`). Never throws: junk gives [].
 *
 * The parser merges histogram and summary samples into one object per family and drops their labels;
 * comment lines (HELP, TYPE) are removed before parsing so every sample keeps its own name and labels.
 */
export function parseMetrics(text: string): MetricsSample[] {
  if (typeof text !== 'string' || text.length === 0) return [];
  // Comments go: TYPE would make the parser fold histograms (losing their labels), and a HELP line without
  // text makes it throw. Without a final newline it drops the last sample.
  const cleaned =
    text
      .replace(/\r\n?/g, '\n')
      .split('\n')
      .filter((l) => !/^\s*#/.test(l))
      .join('\n') + '\n';
  let families: ReturnType<typeof parsePrometheusTextFormat>;
  try {
    families = parsePrometheusTextFormat(cleaned);
  } catch {
    return [];
  }
  const out: MetricsSample[] = [];
  for (const f of families) {
    if (!f || typeof f.name !== 'string' || !METRIC_NAME.test(f.name)) continue;
    for (const m of f.metrics ?? []) {
      const labels = { ...(m.labels ?? {}) };
      const push = (name: string, raw: string | undefined, extra?: Record<string, string>) => {
        const v = promNumber(raw);
        if (v === null) return;
        out.push({ name, labels: extra ? { ...labels, ...extra } : labels, value: v });
      };
      if (m.value !== undefined) push(f.name, m.value);
      if (m.buckets) for (const [le, v] of Object.entries(m.buckets)) push(`${f.name}_bucket`, v, { le });
      if (m.quantiles) for (const [q, v] of Object.entries(m.quantiles)) push(f.name, v, { quantile: q });
      if (m.count !== undefined) push(`${f.name}_count`, m.count);
      if (m.sum !== undefined) push(`${f.name}_sum`, m.sum);
    }
  }
  return out;
}

/**
 * Bytes of /metrics read. SGLang's exposition is tens of KB (a few hundred with many DP ranks and histograms):
 * 1 MiB is plenty, and bounds what a hostile or broken server costs per poll.
 */
export const METRICS_MAX_BYTES = 1024 * 1024;

/**
 * GET /metrics (as the monitor, the drain before a stop, and the guard read it), summarised. An answer over
 * METRICS_MAX_BYTES is not parsed: a cut exposition lacks whole families or DP ranks, and its sums (running
 * requests, throughput) would be wrong in the worst way for a drain, which stops at 0. It is reported as
 * unavailable instead. Rejects as httpGet does (no answer, refused).
 */
export async function fetchMetrics(
  t: Transport,
  host: string,
  port: number,
  opts: { timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<{ status: number; summary: MetricsSummary | null; error: string | null }> {
  const r = await httpGet(t, host, port, '/metrics', {
    timeoutMs: opts.timeoutMs ?? 5000,
    maxBytes: METRICS_MAX_BYTES,
    headers: opts.headers,
  });
  if (r.status !== 200) return { status: r.status, summary: null, error: `/metrics: HTTP ${r.status}` };
  if (r.truncated)
    return {
      status: r.status,
      summary: null,
      error: `metrics unavailable: response over ${METRICS_MAX_BYTES / 1024 / 1024} MiB (not parsed)`,
    };
  return { status: r.status, summary: metricsSummary(parseMetrics(r.body)), error: null };
}

export interface MetricsSummary {
  /** token/s, summed over DP ranks. */
  genThroughput: number | null;
  runningReqs: number | null;
  queueReqs: number | null;
  /** KV-cache token usage 0..1, the mean over DP ranks (each rank has its own, equal-sized pool); for hybrid
   *  models each rank's figure is the maximum over its pools (full, SWA, Mamba), as SGLang computes it. */
  tokenUsage: number | null;
  /** The highest per-rank usage (the rank closest to retracting). */
  maxTokenUsage: number | null;
  /** Mean over DP ranks of the speculative accept length; null when absent or 0 (no speculative decoding). */
  specAcceptLength: number | null;
  /** Requests retracted for lack of KV cache (gauge), summed over DP ranks. */
  retractedReqs: number | null;
  /** Requests retracted since start (`num_retracted_requests_total`, the 2026 counter that replaces the gauge). */
  retractedTotal?: number | null;
  promptTokensTotal: number | null;
  generationTokensTotal: number | null;
}

/** `sglang:gen_throughput` and `sglang_gen_throughput` (gateways, OpenMetrics escaping) → `gen_throughput`. */
function baseName(name: string): string | null {
  return name.length > 7 && name.startsWith('sglang') && (name[6] === ':' || name[6] === '_') ? name.slice(7) : null;
}

/** Labels that identify a rank; every other label (is_streaming, priority, model_name…) splits one rank's figure. */
const RANK_LABELS = ['dp_rank', 'tp_rank', 'pp_rank', 'moe_ep_rank', 'ep_rank', 'attn_cp_rank'];

/**
 * Per-DP-rank values of one gauge: samples grouped by `dp_rank` (absent = one group); within a group the
 * other ranks (tp_rank, pp_rank) and label sets repeat or split the same figure, so the group's value is
 * its maximum. `names` are base names (without the `sglang:` / `sglang_` prefix).
 */
function perRank(samples: MetricsSample[], ...names: string[]): number[] | null {
  const groups = new Map<string, number>();
  for (const s of samples) {
    const b = baseName(s.name);
    if (b === null || !names.includes(b) || !Number.isFinite(s.value)) continue;
    const k = s.labels.dp_rank ?? '';
    const prev = groups.get(k);
    groups.set(k, prev === undefined ? s.value : Math.max(prev, s.value));
  }
  return groups.size ? [...groups.values()] : null;
}

/**
 * Per-DP-rank totals of a counter: newer builds split a counter by labels such as `is_streaming` and
 * `priority`, so one rank's total is the SUM over its label sets; the TP/PP ranks of one DP rank repeat it
 * (maximum); DP ranks are summed by the caller.
 */
function perRankCounter(samples: MetricsSample[], ...names: string[]): number[] | null {
  const byRank = new Map<string, Map<string, number>>();
  for (const s of samples) {
    const b = baseName(s.name);
    if (b === null || !names.includes(b) || !Number.isFinite(s.value)) continue;
    const dp = s.labels.dp_rank ?? '';
    const sub = RANK_LABELS.slice(1)
      .map((l) => s.labels[l] ?? '')
      .join('\0');
    let m = byRank.get(dp);
    if (!m) byRank.set(dp, (m = new Map()));
    m.set(sub, (m.get(sub) ?? 0) + s.value);
  }
  if (!byRank.size) return null;
  return [...byRank.values()].map((m) => Math.max(...m.values()));
}

const sum = (v: number[] | null) => (v ? v.reduce((a, b) => a + b, 0) : null);
const mean = (v: number[] | null) => (v && v.length ? v.reduce((a, b) => a + b, 0) / v.length : null);

/** Pool gauges whose maximum is SGLang's pressure figure (pool_stats_observer.py get_max_pool_usage). */
const POOL_GAUGES = new Set(['full_token_usage', 'swa_token_usage', 'mamba_usage']);

/**
 * Per-DP-rank KV usage. `sglang:token_usage` already IS SGLang's max over the full/SWA/Mamba pools
 * (`stats.token_usage = round(get_max_pool_usage(), 2)`): it is taken whenever a rank reports it. Only a rank
 * without it falls back to the maximum over the pool gauges. Never `pending_prealloc_token_usage` (a PD decode
 * node's tokens pre-allocated for transfers, not pool usage) nor any other `*_token_usage` gauge.
 */
function perRankUsage(samples: MetricsSample[]): number[] | null {
  const plain = new Map<string, number>();
  const pools = new Map<string, number>();
  for (const s of samples) {
    const b = baseName(s.name);
    if (b === null || !Number.isFinite(s.value)) continue;
    const into = b === 'token_usage' ? plain : POOL_GAUGES.has(b) ? pools : null;
    if (!into) continue;
    const k = s.labels.dp_rank ?? '';
    const prev = into.get(k);
    into.set(k, prev === undefined ? s.value : Math.max(prev, s.value));
  }
  for (const [k, v] of pools) if (!plain.has(k)) plain.set(k, v);
  return plain.size ? [...plain.values()] : null;
}

export function metricsSummary(samples: MetricsSample[]): MetricsSummary {
  const accept = perRank(samples, 'spec_accept_length')?.filter((x) => x > 0) ?? null;
  const usage = perRankUsage(samples);
  return {
    genThroughput: sum(perRank(samples, 'gen_throughput')),
    runningReqs: sum(perRank(samples, 'num_running_reqs')),
    queueReqs: sum(perRank(samples, 'num_queue_reqs')),
    tokenUsage: mean(usage),
    maxTokenUsage: usage ? Math.max(...usage) : null,
    specAcceptLength: accept && accept.length ? mean(accept) : null,
    retractedReqs: sum(perRank(samples, 'num_retracted_reqs')),
    retractedTotal: sum(perRankCounter(samples, 'num_retracted_requests_total', 'num_retracted_requests')),
    promptTokensTotal: sum(perRankCounter(samples, 'prompt_tokens_total', 'prompt_tokens')),
    generationTokensTotal: sum(perRankCounter(samples, 'generation_tokens_total', 'generation_tokens')),
  };
}
