/**
 * Talking to a gateway through the node's SSH connection (direct-tcpip, no local port): read its workers, take
 * one out of rotation with the call its version expects (api.ts removeCall), wait until the gateway has applied
 * it (POST /workers and DELETE answer 202 and apply in the background; smg 1.5+ drains first).
 */
import { httpGet } from '../sglang/endpoints';
import type { Transport } from '../ssh/transport';
import {
  GatewayProfile,
  GatewayWorker,
  addCall,
  parseAddAnswer,
  parseListWorkers,
  parseRemoveAnswer,
  parseWorkersList,
  removeCall,
} from './api';
import type { Gateway } from './discover';

interface GatewayRef {
  port: number;
  profile: GatewayProfile;
}

export function gatewayRef(g: Gateway): GatewayRef | null {
  return g.port !== null && g.profile !== null ? { port: g.port, profile: g.profile } : null;
}

/** The URLs the gateway routes to now (GET /workers, or /list_workers on legacy builds). */
export async function listWorkerUrls(t: Transport, g: GatewayRef, timeoutMs = 5000): Promise<string[]> {
  const path = g.profile === 'legacy-0.1' ? '/list_workers' : '/workers';
  const r = await httpGet(t, '127.0.0.1', g.port, path, { timeoutMs, maxBytes: 4 << 20 });
  if (r.status !== 200) throw new Error(`GET ${path} on the gateway :${g.port} answered HTTP ${r.status}.`);
  if (g.profile === 'legacy-0.1') {
    const urls = parseListWorkers(r.body);
    if (!urls) throw new Error(`GET /list_workers on the gateway :${g.port} did not answer {"urls":[…]}.`);
    return urls;
  }
  const l = parseWorkersList(r.body);
  if (!l) throw new Error(`GET /workers on the gateway :${g.port} did not answer {"workers":[…]}.`);
  // a worker whose RemoveWorker job is queued still routes until the job runs: it counts as present
  return l.workers.map((w) => w.url);
}

interface RemoveOutcome {
  url: string;
  accepted: boolean;
  message: string;
  /** The request as sent (`DELETE /workers/…`), for the report. */
  request: string;
}

/** Ask the gateway to remove one worker. Never throws for an HTTP answer; a transport failure throws. */
export async function removeWorker(t: Transport, g: GatewayRef, w: Pick<GatewayWorker, 'id' | 'url'>): Promise<RemoveOutcome> {
  const call = removeCall(g.profile, w);
  const r = await httpGet(t, '127.0.0.1', g.port, call.path, { method: call.method, timeoutMs: 10_000, maxBytes: 1 << 20 });
  const a = parseRemoveAnswer(g.profile, r.status, r.body);
  return { url: w.url, accepted: a.accepted, message: a.message, request: `${call.method} ${call.path}` };
}

/**
 * Poll the worker list until none of `urls` is listed (`absent`) or every one is (`present`); resolves to those not
 * there yet at the deadline ([] = done).
 */
async function waitListed(
  t: Transport,
  g: GatewayRef,
  urls: string[],
  want: 'absent' | 'present',
  timeoutMs: number,
  signal?: AbortSignal,
  pollMs = 250,
): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const now = await listWorkerUrls(t, g);
    const left = urls.filter((u) => now.includes(u) === (want === 'absent'));
    if (left.length === 0 || Date.now() >= deadline || signal?.aborted) return left;
    await new Promise((r) => setTimeout(r, pollMs));
  }
}

/** Poll the worker list until none of `urls` is left; resolves to those still present at the deadline ([] = done). */
export function waitRemoved(t: Transport, g: GatewayRef, urls: string[], timeoutMs: number, signal?: AbortSignal, pollMs = 250) {
  return waitListed(t, g, urls, 'absent', timeoutMs, signal, pollMs);
}

/** Ask the gateway to add one worker (back). Never throws for an HTTP answer; a transport failure throws. */
export async function addWorker(
  t: Transport,
  g: GatewayRef,
  w: Pick<GatewayWorker, 'url' | 'type' | 'bootstrapPort'>,
): Promise<RemoveOutcome> {
  const call = addCall(g.profile, w);
  const r = await httpGet(t, '127.0.0.1', g.port, call.path, {
    method: call.method,
    ...(call.body !== undefined ? { body: call.body } : {}),
    timeoutMs: 30_000,
    maxBytes: 1 << 20,
  });
  const a = parseAddAnswer(g.profile, r.status, r.body);
  return { url: w.url, accepted: a.accepted, message: a.message, request: `${call.method} ${call.path}` };
}

/** Poll the worker list until every one of `urls` is listed; resolves to those still missing at the deadline ([] = done). */
export function waitAdded(t: Transport, g: GatewayRef, urls: string[], timeoutMs: number, signal?: AbortSignal, pollMs = 250) {
  return waitListed(t, g, urls, 'present', timeoutMs, signal, pollMs);
}
