/**
 * Servers the extension itself stopped (Stop Server, Restart Server, a salvage that stops the servers): their
 * process going away is the user's doing, not a crash ("crashed (crash) — the server process is gone"
 * after a deliberate Stop Server). The tree shows them as "stopped by you, 22:32", neutral; no alert is raised.
 *
 * The mark belongs to the process that was stopped: a new process on the same port (a restart, a
 * relaunch) ends it, and so does that server loading again (starting) or becoming ready; its later death is an
 * alert like any other.
 */
export class StoppedByYou {
  private readonly map = new Map<string, { at: number; pid?: number }>();

  private static key(node: string, port: number): string {
    return `${node}\n${port}`;
  }

  /** Called just before the extension stops the server on `port` of `node` (its pid when known). */
  mark(node: string, port: number, at = Date.now(), pid?: number): void {
    this.map.set(StoppedByYou.key(node, port), { at, pid });
  }

  /** When the extension stopped it, or undefined. */
  at(node: string, port: number): number | undefined {
    return this.map.get(StoppedByYou.key(node, port))?.at;
  }

  /** A server answers on the port again (started, relaunched): it is no longer "stopped by you". */
  clear(node: string, port: number): void {
    this.map.delete(StoppedByYou.key(node, port));
  }

  /** A probe saw process `pid` serving `port`: another process than the one stopped ends the mark. */
  observe(node: string, port: number, pid: number | null | undefined): void {
    const m = this.map.get(StoppedByYou.key(node, port));
    if (m && m.pid !== undefined && typeof pid === 'number' && pid !== m.pid) this.clear(node, port);
  }

  /**
   * A guard transition of the server on `port`: true when it is the user's doing (no alert). The mark is dropped
   * when the server runs again: after it had gone (from crashed), or loading again (to starting, or starting →
   * ready). A server being stopped still answers for a while (its last requests, idle → serving): that keeps it.
   */
  judge(node: string, port: number, from: string, to: string): boolean {
    if (this.at(node, port) === undefined) return false;
    if ((from === 'crashed' && to !== 'crashed') || to === 'starting' || (from === 'starting' && to === 'ready')) {
      this.clear(node, port);
      return false;
    }
    return true;
  }
}
