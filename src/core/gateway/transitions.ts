/**
 * What `watch` and the extension's alerts judge of gateways (fed to NodeGuard, which emits one transition per change):
 * the gateway's readiness (`/readiness`, never `/health` or `/liveness`: they answer 200 with every worker down) and
 * each worker's state — `ready`, `draining`, `unhealthy`, or `removed` once the gateway no longer lists it.
 */
import type { Gateway } from './discover';

interface GatewayValue {
  value: string;
  message: string;
  extra: { subject: 'gateway'; port?: number; worker?: string };
}

/** Remembers the workers each gateway listed, so one that disappears reads `removed` (until it comes back). */
export class GatewayWatch {
  private readonly seen = new Map<string, Set<string>>();

  values(gateways: readonly Gateway[]): Array<[string, GatewayValue]> {
    const out: Array<[string, GatewayValue]> = [];
    for (const g of gateways) {
      const id = String(g.port ?? `pid${g.pid}`);
      const base = { subject: 'gateway' as const, ...(g.port !== null ? { port: g.port } : {}) };
      if (g.ready !== null)
        out.push([
          `gateway:${id}`,
          {
            value: g.ready ? 'ready' : 'not-ready',
            message: g.ready
              ? `gateway :${id} is ready again (/readiness)`
              : `gateway :${id} is not ready: ${g.readyReason ?? 'no healthy worker'} (/readiness answered 503)`,
            extra: base,
          },
        ]);
      const seen = this.seen.get(id) ?? new Set<string>();
      this.seen.set(id, seen);
      const now = new Set<string>();
      for (const w of g.workers) {
        now.add(w.url);
        seen.add(w.url);
        const where = w.node ? ` (${w.node}:${w.serverPort})` : '';
        const failStatus = w.status && w.status !== 'not_ready' ? ` (${w.status})` : '';
        const value = w.status === 'draining' ? 'draining' : w.healthy === false ? 'unhealthy' : w.healthy === true ? 'ready' : null;
        if (value === null) continue;
        out.push([
          `gateway:${id}:${w.url}`,
          {
            value,
            message:
              value === 'unhealthy'
                ? `worker ${w.url}${where} is out of rotation on gateway :${id}: its health checks fail${failStatus}`
                : value === 'draining'
                  ? `worker ${w.url}${where} is draining on gateway :${id} (being removed)`
                  : `worker ${w.url}${where} is healthy on gateway :${id}`,
            extra: { ...base, worker: w.url },
          },
        ]);
      }
      for (const url of seen)
        if (!now.has(url))
          out.push([
            `gateway:${id}:${url}`,
            { value: 'removed', message: `worker ${url} was removed from gateway :${id}`, extra: { ...base, worker: url } },
          ]);
    }
    return out;
  }
}
