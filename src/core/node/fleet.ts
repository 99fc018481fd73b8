/**
 * The fleet: the current node list and the latest probe (or failure) of each node.
 * Refreshes are deduplicated per node and run concurrently across nodes, each over its pooled
 * connection. The extension's tree and the CLI both read from here.
 */
import { EventEmitter } from 'node:events';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { runOperation } from '../remote/operation';
import type { ConnectionPool } from '../ssh/pool';
import { ProbeResult, probeOperation } from './probe';
import type { NodeSpec } from '../ssh/config';

export interface NodeStatus {
  state: 'unknown' | 'probing' | 'ok' | 'error';
  probe?: ProbeResult;
  error?: { code: string; message: string };
  updatedAt?: number;
}

interface FleetOptions {
  maxDepth?: number;
  maxArtifacts?: number;
}

export class Fleet {
  private list: NodeSpec[] = [];
  private readonly statuses = new Map<string, NodeStatus>();
  private readonly inflight = new Map<string, Promise<NodeStatus>>();
  private readonly events = new EventEmitter();

  constructor(
    private readonly pool: ConnectionPool,
    private opts: FleetOptions = {},
  ) {}

  setOptions(opts: FleetOptions): void {
    this.opts = opts;
  }

  setNodes(nodes: NodeSpec[]): void {
    const keep = new Set(nodes.map((n) => n.name));
    for (const old of this.list) {
      if (!keep.has(old.name)) {
        this.statuses.delete(old.name);
        this.pool.forget(old);
      }
    }
    this.list = nodes;
    this.events.emit('change', undefined);
  }

  nodes(): NodeSpec[] {
    return this.list;
  }

  node(name: string): NodeSpec | undefined {
    return this.list.find((n) => n.name === name);
  }

  status(name: string): NodeStatus {
    return this.statuses.get(name) ?? { state: 'unknown' };
  }

  /** Fires with the node name that changed, or undefined for the whole list. */
  onDidChange(fn: (name: string | undefined) => void): () => void {
    this.events.on('change', fn);
    return () => this.events.off('change', fn);
  }

  refresh(name: string): Promise<NodeStatus> {
    const running = this.inflight.get(name);
    if (running) return running;
    const node = this.node(name);
    if (!node) return Promise.resolve({ state: 'error', error: { code: 'config', message: `Unknown node ${name}.` } });
    const prev = this.statuses.get(name);
    this.statuses.set(name, { ...(prev ?? {}), state: 'probing' });
    this.events.emit('change', name);
    const p = (async (): Promise<NodeStatus> => {
      let st: NodeStatus;
      try {
        const t = this.pool.get(node);
        // A user-triggered refresh retries after a host-key or auth failure.
        (t as { resetFailure?: () => void }).resetFailure?.();
        const probe = await runOperation(
          t,
          probeOperation(node.name, { roots: node.roots, maxDepth: this.opts.maxDepth, maxArtifacts: this.opts.maxArtifacts }),
        );
        st = { state: 'ok', probe, updatedAt: Date.now() };
      } catch (e) {
        const code = e instanceof GpuSessionsError ? e.code : 'remote-failed';
        st = { state: 'error', error: { code, message: errorMessage(e) }, probe: prev?.probe, updatedAt: Date.now() };
      }
      this.statuses.set(name, st);
      this.inflight.delete(name);
      this.events.emit('change', name);
      return st;
    })();
    this.inflight.set(name, p);
    return p;
  }

  async refreshAll(): Promise<void> {
    await Promise.all(this.list.map((n) => this.refresh(n.name)));
  }

  dispose(): void {
    this.events.removeAllListeners();
  }
}
