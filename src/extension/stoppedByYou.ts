/**
 * Servers the extension itself stopped (Stop Server, Restart Server, a salvage that stops the servers): their
 * process going away is the user's doing, not a crash (issue 30: "crashed (crash) — the server process is gone"
 * after a deliberate Stop Server). The tree shows them as "stopped by you, 22:32", neutral; no alert is raised.
 */
export class StoppedByYou {
  private readonly map = new Map<string, number>();

  private static key(node: string, port: number): string {
    return `${node}\n${port}`;
  }

  /** Called just before the extension stops the server on `port` of `node`. */
  mark(node: string, port: number, at = Date.now()): void {
    this.map.set(StoppedByYou.key(node, port), at);
  }

  /** When the extension stopped it, or undefined. */
  at(node: string, port: number): number | undefined {
    return this.map.get(StoppedByYou.key(node, port));
  }

  /** A server answers on the port again (started, relaunched): it is no longer "stopped by you". */
  clear(node: string, port: number): void {
    this.map.delete(StoppedByYou.key(node, port));
  }

  /**
   * A guard transition of the server on `port`: true when it is the user's doing (no alert). The mark is dropped
   * only when the server runs again after it had gone (from crashed): a server being stopped still answers for a
   * while (its last requests, idle → serving), and clearing the mark then turned its end into a crash alert
   * (seen after a salvage that stopped the servers).
   */
  judge(node: string, port: number, from: string, to: string): boolean {
    if (this.at(node, port) === undefined) return false;
    if (from === 'crashed' && to !== 'crashed') {
      this.clear(node, port);
      return false;
    }
    return true;
  }
}
