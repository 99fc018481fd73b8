/**
 * What Release Node (and Take It Out of Rotation) did on purpose: the workers it removed from
 * gateways and the nodes it released. Their consequences are the user's doing: a worker's removal is a neutral row,
 * not a warning, and the rank loss or the emptied gateway the release's review predicted is an info notification,
 * not an error or warning alert.
 * Marks are forgotten after an hour. No vscode import.
 */
const KEEP_MS = 60 * 60_000;

export class ReleasedByYou {
  /** `${gatewayNode}\n${workerUrl}` → when, and the gateway's port when known */
  private readonly removed = new Map<string, { at: number; port: number | null }>();
  /** released node → when */
  private readonly released = new Map<string, number>();
  /** `${gatewayNode}\n${port}` → the release that left that gateway no healthy worker, and when */
  private readonly emptied = new Map<string, { node: string; at: number }>();

  /** Just before the extension removes `url` from a gateway on `gatewayNode`. */
  markRemoved(gatewayNode: string, url: string, port: number | null = null, at = Date.now()): void {
    this.removed.set(`${gatewayNode}\n${url}`, { at, port });
  }

  /**
   * The workers removed from gateways on `gatewayNode` (with a known port) in the last hour, by their guard key
   * (`gateway:<port>:<url>`). The neutral rows come from these too: the guard reports a removal only for a worker it
   * saw listed before, and a gateway started just before Release Node may never have been probed with its workers.
   */
  removals(gatewayNode: string, now = Date.now()): Array<{ key: string; url: string; port: number; at: number }> {
    const out: Array<{ key: string; url: string; port: number; at: number }> = [];
    for (const [k, v] of this.removed) {
      const i = k.indexOf('\n');
      if (k.slice(0, i) !== gatewayNode || v.port === null || now - v.at >= KEEP_MS) continue;
      const url = k.slice(i + 1);
      out.push({ key: `gateway:${v.port}:${url}`, url, port: v.port, at: v.at });
    }
    return out;
  }

  /** Just before the extension releases `node` (drains and stops its servers). */
  markReleased(node: string, at = Date.now()): void {
    this.released.set(node, at);
  }

  /** Just before a release of `releasedNode` removes the last healthy workers of the gateway on `gatewayNode`:`port`
   *  (its review said so: it answers 503 until another is added). */
  markEmptied(gatewayNode: string, port: number, releasedNode: string, at = Date.now()): void {
    this.emptied.set(`${gatewayNode}\n${port}`, { node: releasedNode, at });
  }

  /** The released node whose release left this gateway with no healthy worker (its "not ready" is expected), for an
   *  hour; else undefined. */
  expectedNotReady(gatewayNode: string, port: number, now = Date.now()): string | undefined {
    return this.emptiedAt(gatewayNode, `gateway:${port}`, now)?.node;
  }

  /** The release that emptied the gateway a guard key names (`gateway:<port>`) on `gatewayNode`, and when; undefined
   *  when none did (or long ago). */
  emptiedAt(gatewayNode: string, key: string, now = Date.now()): { node: string; at: number } | undefined {
    const m = /^gateway:(\d+)$/.exec(key);
    const e = m ? this.emptied.get(`${gatewayNode}\n${m[1]}`) : undefined;
    return e && now - e.at < KEEP_MS ? e : undefined;
  }

  /** A removal that did not happen (cancelled before it): its later removal is nobody's doing we know of. */
  unmarkRemoved(gatewayNode: string, url: string): void {
    this.removed.delete(`${gatewayNode}\n${url}`);
  }

  /**
   * When the extension removed the worker a guard key names (`gateway:<port>:<url>`) from a gateway on `gatewayNode`;
   * undefined when it did not (or long ago).
   */
  removedAt(gatewayNode: string, key: string, now = Date.now()): number | undefined {
    const m = /^gateway:[^:]+:(.+)$/.exec(key);
    if (!m) return undefined;
    const at = this.removed.get(`${gatewayNode}\n${m[1]}`)?.at;
    return at !== undefined && now - at < KEEP_MS ? at : undefined;
  }

  /** A rank-lost message (`… rank 1 (on gpu-b) …`) naming a node the extension released: that node; else undefined. */
  expectedRankLoss(message: string, now = Date.now()): string | undefined {
    for (const [node, at] of this.released) if (now - at < KEEP_MS && message.includes(`(on ${node})`)) return node;
    return undefined;
  }
}
