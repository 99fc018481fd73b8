/**
 * After a restart that took a server out of rotation first (Restart Server → "Take It Out of Rotation First"):
 * add its workers back to every gateway they were removed from, with the call each version expects (api.ts
 * addCall), and wait until each gateway lists them again. Never throws for a gateway's refusal: each outcome is
 * returned, so the caller can say which gateway still lacks the server.
 */
import { errorMessage } from '../util/errors';
import type { Transport } from '../ssh/transport';
import { addWorker, gatewayRef, waitAdded } from './client';
import type { Routing } from './rotation';

interface AddBackOutcome {
  node: string;
  port: number | null;
  added: string[];
  /** url → why it is not back (refused, not listed by the deadline, transport error). */
  failed: Array<{ url: string; message: string }>;
}

export async function addBackToGateways(
  rs: Routing[],
  transportOf: (node: string) => Transport,
  o: { timeoutMs: number; signal?: AbortSignal; onProgress?: (m: string) => void },
): Promise<AddBackOutcome[]> {
  const say = o.onProgress ?? (() => undefined);
  const deadline = Date.now() + o.timeoutMs;
  return Promise.all(
    rs.map(async (r): Promise<AddBackOutcome> => {
      const out: AddBackOutcome = { node: r.node, port: r.gateway.port, added: [], failed: [] };
      const ref = gatewayRef(r.gateway);
      if (!ref) {
        out.failed.push(...r.workers.map((w) => ({ url: w.url, message: 'the gateway API was not found' })));
        return out;
      }
      const t = transportOf(r.node);
      const asked: string[] = [];
      for (const w of r.workers) {
        if (o.signal?.aborted) {
          out.failed.push({ url: w.url, message: 'cancelled' });
          continue;
        }
        say(`Adding ${w.url} back to the gateway :${ref.port} on ${r.node}…`);
        try {
          const a = await addWorker(t, ref, w);
          if (a.accepted) asked.push(w.url);
          else out.failed.push({ url: w.url, message: `${a.request} refused: ${a.message}` });
        } catch (e) {
          out.failed.push({ url: w.url, message: errorMessage(e) });
        }
      }
      if (!asked.length) return out;
      let missing: string[];
      try {
        missing = await waitAdded(t, ref, asked, Math.max(2000, deadline - Date.now()), o.signal);
      } catch (e) {
        missing = asked;
        for (const u of asked) out.failed.push({ url: u, message: errorMessage(e) });
        return out;
      }
      for (const u of asked)
        if (missing.includes(u)) out.failed.push({ url: u, message: 'not listed by the gateway yet (its health check may still fail)' });
        else out.added.push(u);
      return out;
    }),
  );
}
