/**
 * The SGLang Model Gateway's HTTP API by version profile (reference sglang-gateway-and-multinode.md, A3/A4):
 * parsers of what it answers (tested on golden responses, test/fixtures/gateway/) and the worker-removal call each
 * version expects. Pure functions: the discovery (discover.ts) and the client (client.ts) do the I/O.
 *
 * Profiles: `legacy-0.1` (/list_workers, /remove_worker?url=), `rest-by-url-0.2` (/workers, id = URL, DELETE by the
 * URL-encoded URL), `rest-by-uuid-0.3` (UUID ids, DELETE /workers/{uuid}), `smg-1.x` (lower-case connection_mode,
 * worker `status` with `draining`).
 */
import { parseMetrics } from '../sglang/endpoints';

export type GatewayProfile = 'legacy-0.1' | 'rest-by-url-0.2' | 'rest-by-uuid-0.3' | 'smg-1.x';
const GATEWAY_PROFILES: readonly GatewayProfile[] = ['legacy-0.1', 'rest-by-url-0.2', 'rest-by-uuid-0.3', 'smg-1.x'];

type WorkerType = 'regular' | 'prefill' | 'decode';

export interface GatewayWorker {
  /** The gateway's id: the URL up to 0.2.x, a UUID from 0.3.0 (legacy: the URL). */
  id: string;
  url: string;
  type: WorkerType;
  /** null: the gateway does not say (legacy without health metrics). */
  healthy: boolean | null;
  /** smg 1.5+: pending|ready|not_ready|failed|draining; older: ready/not_ready from is_healthy; null unknown. */
  status: string | null;
  /** In-flight requests the gateway counts for it; null unknown. */
  load: number | null;
  /** Prefill bootstrap port (PD). */
  bootstrapPort: number | null;
  /** A queued add/remove job the gateway reports for it (`RemoveWorker`, `pending`…). */
  job: { type: string; status: string; message: string | null } | null;
  /** The fleet's server this URL reaches (mapping.ts); null when no probed server matches. */
  node: string | null;
  serverPort: number | null;
}

const UUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function isUuid(s: string): boolean {
  return UUID_RE.test(s);
}

function obj(v: unknown): Record<string, unknown> | null {
  return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
}

function str(v: unknown): string | null {
  return typeof v === 'string' ? v : null;
}

function int(v: unknown): number | null {
  return typeof v === 'number' && Number.isFinite(v) ? v : typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : null;
}

function json(body: string): unknown {
  try {
    return JSON.parse(body);
  } catch {
    return undefined;
  }
}

function workerType(v: unknown): WorkerType {
  const s = String(v ?? '').toLowerCase();
  return s === 'prefill' || s === 'decode' ? s : 'regular';
}

interface WorkersList {
  workers: GatewayWorker[];
  /** Which profile the shape says (null: an empty list says nothing). */
  profile: GatewayProfile | null;
}

/** `GET /workers` (0.2.1 → smg): `{"workers":[WorkerInfo…],"total":N,"stats":{…}}`. null: not that shape. */
export function parseWorkersList(body: string): WorkersList | null {
  const o = obj(json(body));
  if (!o || !Array.isArray(o.workers)) return null;
  const workers: GatewayWorker[] = [];
  let profile: GatewayProfile | null = null;
  for (const raw of o.workers.slice(0, 4096)) {
    const w = obj(raw);
    if (!w) continue;
    const url = str(w.url) ?? str(w.worker_url);
    if (!url) continue;
    const id = str(w.id) ?? url;
    const healthy = typeof w.is_healthy === 'boolean' ? w.is_healthy : null;
    const status = str(w.status);
    const cm = str(w.connection_mode) ?? '';
    // smg 1.x: a status field, or a lower-case connection_mode; 0.3.x: a UUID id; 0.2.x: the id is the URL
    const p: GatewayProfile = status !== null || /^(http|grpc)$/.test(cm) ? 'smg-1.x' : isUuid(id) ? 'rest-by-uuid-0.3' : 'rest-by-url-0.2';
    if (!profile || GATEWAY_PROFILES.indexOf(p) > GATEWAY_PROFILES.indexOf(profile)) profile = p;
    const js = obj(w.job_status);
    workers.push({
      id,
      url,
      type: workerType(w.worker_type),
      healthy,
      status: status ?? (healthy === null ? null : healthy ? 'ready' : 'not_ready'),
      load: (int(w.load) ?? -1) >= 0 ? int(w.load) : null,
      bootstrapPort: int(w.bootstrap_port),
      job: js ? { type: str(js.job_type) ?? '', status: str(js.status) ?? '', message: str(js.message) } : null,
      node: null,
      serverPort: null,
    });
  }
  return { workers, profile };
}

/** `GET /list_workers` (≤0.2.1): `{"urls":[…]}`. null: not that shape. */
export function parseListWorkers(body: string): string[] | null {
  const o = obj(json(body));
  if (!o || !Array.isArray(o.urls)) return null;
  return o.urls.filter((u): u is string => typeof u === 'string').slice(0, 4096);
}

interface Readiness {
  ready: boolean;
  healthyWorkers: number | null;
  totalWorkers: number | null;
  reason: string | null;
}

/** `GET /readiness`: 200 `{"status":"ready",…}` / 503 `{"status":"not ready","reason":…}`. null: not a gateway's. */
export function parseReadiness(status: number, body: string): Readiness | null {
  const o = obj(json(body));
  if (!o || typeof o.status !== 'string') return null;
  if (status !== 200 && status !== 503) return null;
  return {
    ready: status === 200 && o.status === 'ready',
    healthyWorkers: int(o.healthy_workers),
    totalWorkers: int(o.total_workers),
    reason: str(o.reason),
  };
}

/** `GET /get_loads`: `{"workers":[{"worker":URL,"load":N}]}`; load -1 (the worker did not answer) → null. */
export function parseLoads(body: string): Map<string, number | null> {
  const m = new Map<string, number | null>();
  const o = obj(json(body));
  if (!o || !Array.isArray(o.workers)) return m;
  for (const raw of o.workers.slice(0, 4096)) {
    const w = obj(raw);
    const url = w && str(w.worker);
    if (!w || !url) continue;
    const n = int(w.load);
    m.set(url, n === null || n < 0 ? null : n);
  }
  return m;
}

interface GatewayMetrics {
  /** `smg_` (≥0.3.0) or `sgl_router_` (≤0.2.4). */
  prefix: 'smg_' | 'sgl_router_';
  health: Map<string, boolean>;
  active: Map<string, number>;
  policy: string | null;
}

/** The gateway's Prometheus text: per-worker health and in-flight gauges, the policy label. null: not a gateway's. */
export function parseGatewayMetrics(text: string): GatewayMetrics | null {
  const hasSmg = /^smg_/m.test(text);
  const hasOld = /^sgl_router_/m.test(text);
  if (!hasSmg && !hasOld) return null;
  const prefix = hasSmg ? 'smg_' : 'sgl_router_';
  const health = new Map<string, boolean>();
  const active = new Map<string, number>();
  let policy: string | null = null;
  for (const s of parseMetrics(text)) {
    const worker = s.labels.worker;
    if (s.labels.policy && !policy) policy = s.labels.policy;
    if (!worker) continue;
    if (s.name === `${prefix}worker_health`) health.set(worker, s.value >= 1);
    else if (s.name === 'smg_worker_requests_active' || s.name === 'sgl_router_running_requests') active.set(worker, s.value);
  }
  return { prefix, health, active, policy };
}

/** The call that takes a worker out of rotation, as its version expects it (A3). */
export function removeCall(profile: GatewayProfile, w: Pick<GatewayWorker, 'id' | 'url'>): { method: 'POST' | 'DELETE'; path: string } {
  if (profile === 'legacy-0.1') return { method: 'POST', path: `/remove_worker?url=${encodeURIComponent(w.url)}` };
  if (profile === 'rest-by-url-0.2') return { method: 'DELETE', path: `/workers/${encodeURIComponent(w.url)}` };
  return { method: 'DELETE', path: `/workers/${encodeURIComponent(w.id)}` };
}

/** The gateway's answer to removeCall: legacy 200 text, REST 202 `{"status":"accepted"}`; else the error it gave. */
export function parseRemoveAnswer(profile: GatewayProfile, status: number, body: string): { accepted: boolean; message: string } {
  if (profile === 'legacy-0.1') return { accepted: status === 200, message: body.trim().slice(0, 300) || `HTTP ${status}` };
  const o = obj(json(body));
  const accepted = status === 202 || (status === 200 && o?.status === 'accepted');
  const msg = str(o?.message) ?? str(o?.error) ?? (body.trim().slice(0, 300) || `HTTP ${status}`);
  const code = str(o?.code);
  return { accepted, message: code ? `${code}: ${msg}` : msg };
}

/** The call that puts a worker (back) into rotation, as its version expects it (A3): legacy by query, REST by JSON. */
export function addCall(
  profile: GatewayProfile,
  w: Pick<GatewayWorker, 'url' | 'type' | 'bootstrapPort'>,
): { method: 'POST'; path: string; body?: string } {
  if (profile === 'legacy-0.1') return { method: 'POST', path: `/add_worker?url=${encodeURIComponent(w.url)}` };
  const spec: Record<string, unknown> = { url: w.url, worker_type: w.type };
  if (w.type === 'prefill' && w.bootstrapPort !== null) spec.bootstrap_port = w.bootstrapPort;
  return { method: 'POST', path: '/workers', body: JSON.stringify(spec) };
}

/** The gateway's answer to addCall: legacy 200 text, REST 202; a 409 WORKER_ALREADY_EXISTS means it is there already. */
export function parseAddAnswer(profile: GatewayProfile, status: number, body: string): { accepted: boolean; message: string } {
  if (profile === 'legacy-0.1') return { accepted: status === 200, message: body.trim().slice(0, 300) || `HTTP ${status}` };
  const o = obj(json(body));
  const code = str(o?.code);
  const accepted = status === 202 || (status === 200 && o?.status === 'accepted') || (status === 409 && code === 'WORKER_ALREADY_EXISTS');
  const msg = str(o?.message) ?? str(o?.error) ?? (body.trim().slice(0, 300) || `HTTP ${status}`);
  return { accepted, message: code ? `${code}: ${msg}` : msg };
}
