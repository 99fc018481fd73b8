/**
 * A shaping TCP relay for tests and benchmarks: it forwards 127.0.0.1:<port> to a loopback target and
 * makes the path look like a long link — a fixed delay each way and a bandwidth cap shared by every
 * connection (one link, like a real route to a rented node in another region).
 *
 * Bounded: loopback only (listen and target); at most `maxBufferedBytes` queued per connection and
 * direction (the source socket is paused beyond that, so memory stays bounded and TCP back-pressure
 * reaches the sender); at most `maxConnections`; and the relay closes itself after `lifetimeMs`.
 *
 * The link model: bytes enter a serializer at `bandwidthBytesPerSec` (per direction, shared), then travel
 * `delayMs`. A chunk leaves at max(now, link free) + size / bandwidth and arrives `delayMs` later.
 */
import * as net from 'node:net';

export interface RelayOptions {
  targetPort: number;
  /** Loopback only (127.0.0.1 or ::1). */
  targetHost?: string;
  /** One-way delay in ms (each direction). */
  delayMs?: number;
  /** Per-direction cap shared by all connections; 0 = unlimited. */
  bandwidthBytesPerSec?: number;
  maxBufferedBytes?: number;
  maxConnections?: number;
  /** The relay closes itself after this long (default 30 min). */
  lifetimeMs?: number;
}

export interface RelayConnection {
  readonly id: number;
  /** Bytes delivered towards the client (downstream) and towards the target (upstream). */
  down: number;
  up: number;
  /** Cut both sides at once (a dropped link). */
  destroy(): void;
}

interface Chunk {
  buf: Buffer;
  at: number;
}

class Direction {
  private q: Chunk[] = [];
  private queued = 0;
  private timer: NodeJS.Timeout | null = null;
  private paused = false;
  delivered = 0;

  constructor(
    private readonly relay: ShapingRelay,
    private readonly dir: 0 | 1,
    private readonly from: net.Socket,
    private readonly to: net.Socket,
    private readonly onBytes: (n: number) => void,
  ) {
    from.on('data', (b: Buffer) => this.push(b));
  }

  private push(b: Buffer): void {
    const at = this.relay.schedule(this.dir, b.length);
    this.q.push({ buf: b, at });
    this.queued += b.length;
    if (!this.paused && this.queued > this.relay.maxBuffered) {
      this.paused = true;
      this.from.pause();
    }
    this.arm();
  }

  private arm(): void {
    if (this.timer || this.q.length === 0) return;
    const wait = Math.max(0, this.q[0].at - performance.now());
    this.timer = setTimeout(() => {
      this.timer = null;
      this.flush();
    }, wait);
  }

  private flush(): void {
    const now = performance.now();
    while (this.q.length && this.q[0].at <= now + 0.5) {
      const c = this.q.shift()!;
      this.queued -= c.buf.length;
      this.delivered += c.buf.length;
      this.onBytes(c.buf.length);
      if (!this.to.destroyed) this.to.write(c.buf);
    }
    if (this.paused && this.queued < this.relay.maxBuffered / 2) {
      this.paused = false;
      this.from.resume();
    }
    this.arm();
  }

  /** Deliver what is queued, then end the other side (a FIN travels the same delay). */
  endAfterQueue(): void {
    const at = this.relay.schedule(this.dir, 0);
    const wait = Math.max(0, Math.max(at, this.q.length ? this.q[this.q.length - 1].at : 0) - performance.now());
    setTimeout(() => {
      this.flush();
      if (this.q.length === 0) this.to.end();
      else setTimeout(() => this.to.end(), Math.max(0, this.q[this.q.length - 1].at - performance.now()) + 1);
    }, wait + 1);
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    this.q = [];
    this.queued = 0;
  }
}

function isLoopback(h: string): boolean {
  return h === '127.0.0.1' || h === '::1' || h === 'localhost';
}

export class ShapingRelay {
  port = 0;
  readonly maxBuffered: number;
  readonly connections: RelayConnection[] = [];
  /** Called for every new connection (tests use it to cut one mid-transfer). */
  onConnection?: (c: RelayConnection) => void;
  private readonly server: net.Server;
  private readonly linkFreeAt: [number, number] = [0, 0];
  private readonly sockets = new Set<net.Socket>();
  private lifetime: NodeJS.Timeout | null = null;
  private nextId = 1;
  private closed = false;

  private constructor(private readonly o: RelayOptions) {
    const target = o.targetHost ?? '127.0.0.1';
    if (!isLoopback(target)) throw new Error(`ShapingRelay: target ${target} is not a loopback address`);
    this.maxBuffered = o.maxBufferedBytes ?? 16 * 1024 * 1024;
    this.server = net.createServer((client) => this.accept(client, target));
    this.server.maxConnections = o.maxConnections ?? 256;
  }

  static async start(o: RelayOptions): Promise<ShapingRelay> {
    const r = new ShapingRelay(o);
    await new Promise<void>((resolve, reject) => {
      r.server.once('error', reject);
      r.server.listen(0, '127.0.0.1', () => resolve());
    });
    r.port = (r.server.address() as net.AddressInfo).port;
    r.lifetime = setTimeout(() => void r.close(), o.lifetimeMs ?? 30 * 60_000);
    r.lifetime.unref();
    return r;
  }

  /** Departure + delay of `n` bytes entering direction `dir` now. */
  schedule(dir: 0 | 1, n: number): number {
    const now = performance.now();
    const bw = this.o.bandwidthBytesPerSec ?? 0;
    const start = Math.max(now, this.linkFreeAt[dir]);
    const leave = bw > 0 ? start + (n * 1000) / bw : start;
    this.linkFreeAt[dir] = leave;
    return leave + (this.o.delayMs ?? 0);
  }

  private accept(client: net.Socket, target: string): void {
    if (this.closed) return void client.destroy();
    const upstream = net.connect(this.o.targetPort, target);
    client.setNoDelay(true);
    upstream.setNoDelay(true);
    this.sockets.add(client);
    this.sockets.add(upstream);
    const conn: RelayConnection = {
      id: this.nextId++,
      down: 0,
      up: 0,
      destroy: () => {
        up.stop();
        down.stop();
        client.destroy();
        upstream.destroy();
      },
    };
    const up = new Direction(this, 0, client, upstream, (n) => (conn.up += n));
    const down = new Direction(this, 1, upstream, client, (n) => (conn.down += n));
    const gone = (s: net.Socket) => () => {
      this.sockets.delete(s);
    };
    client.on('close', gone(client));
    upstream.on('close', gone(upstream));
    client.on('error', () => conn.destroy());
    upstream.on('error', () => conn.destroy());
    client.on('end', () => up.endAfterQueue());
    upstream.on('end', () => down.endAfterQueue());
    this.connections.push(conn);
    if (this.connections.length > 1000) this.connections.shift();
    this.onConnection?.(conn);
  }

  /** Cut every open connection (the link went down); the listener stays. */
  dropAll(): void {
    for (const c of this.connections) c.destroy();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.lifetime) clearTimeout(this.lifetime);
    this.dropAll();
    for (const s of this.sockets) s.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}

/**
 * A relay in its own process (benchmarks: the relay's work must not share the measured event loop).
 * Prints `{"port":N}` on stdout once listening; ends when its stdin closes (the parent went away) or after
 * its lifetime.
 */
export async function relayMain(argv: string[]): Promise<void> {
  const num = (name: string, dflt: number): number => {
    const i = argv.indexOf(name);
    return i >= 0 ? Number(argv[i + 1]) : dflt;
  };
  const r = await ShapingRelay.start({
    targetPort: num('--target', 0),
    delayMs: num('--delay-ms', 0),
    bandwidthBytesPerSec: num('--bandwidth', 0),
    lifetimeMs: num('--lifetime-ms', 30 * 60_000),
  });
  process.stdout.write(JSON.stringify({ port: r.port }) + '\n');
  const stop = () => void r.close().then(() => process.exit(0));
  process.stdin.on('end', stop);
  process.stdin.on('close', stop);
  process.stdin.resume();
  setTimeout(stop, num('--lifetime-ms', 30 * 60_000) + 1000).unref();
}

if (require.main === module) void relayMain(process.argv.slice(2));
