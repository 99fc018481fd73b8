/**
 * The servers a node's probes listed, kept by port after their process is gone, so that a crashed server stays
 * listed (with the command line it ran with) until something else takes its port or it is forgotten (
 * a crashed server dropped out of Servers and had no way back). Pure, no vscode.
 */
import type { SglangServer } from '../sglang/serverArgv';

/** Ports remembered per node at most (the oldest sighting goes first). */
const MAX_PORTS = 64;

export interface GoneServer {
  server: SglangServer;
  /** Why it is listed: the guard's message (the exception line when there is one). */
  message: string;
  class?: string;
}

export class LastSeenServers {
  private readonly byPort = new Map<number, SglangServer>();

  /** A probe's servers: each port's latest process. */
  observe(servers: readonly SglangServer[]): void {
    for (const s of servers) {
      this.byPort.delete(s.port);
      this.byPort.set(s.port, s);
    }
    while (this.byPort.size > MAX_PORTS) this.byPort.delete(this.byPort.keys().next().value as number);
  }

  /** The server last seen on a port (alive or not). */
  get(port: number): SglangServer | undefined {
    return this.byPort.get(port);
  }

  /** A port the user freed on purpose (stopped by you): nothing to list. */
  forget(port: number): void {
    this.byPort.delete(port);
  }

  /**
   * Servers the probe no longer lists whose port the guard judges crashed: as they were last seen, by port.
   * `problems`: the guard's problems of the node (other subjects are ignored).
   */
  crashed(
    listed: readonly SglangServer[],
    problems: ReadonlyArray<{ to: string; port?: number; message: string; class?: string }>,
  ): GoneServer[] {
    const live = new Set(listed.map((s) => s.port));
    const out: GoneServer[] = [];
    for (const p of problems) {
      if (p.to !== 'crashed' || p.port === undefined || live.has(p.port)) continue;
      const server = this.byPort.get(p.port);
      if (server) out.push({ server, message: p.message, ...(p.class ? { class: p.class } : {}) });
    }
    return out.sort((a, b) => a.server.port - b.server.port);
  }
}
