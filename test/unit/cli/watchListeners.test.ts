/** `watch` over many nodes: every node's exec holds an abort listener at once; no leak warning, none left after. */
import assert from 'node:assert/strict';
import { getEventListeners } from 'node:events';
import { cmdWatch, watchSignal } from '../../../src/cli/cmdWatch';
import type { ConnectionPool } from '../../../src/core/ssh/pool';
import type { NodeSpec } from '../../../src/core/ssh/config';
import type { ExecOptions, ExecResult } from '../../../src/core/ssh/transport';
import { ExecFakeTransport } from '../../helpers/fakeTransport';

/** A node that fails every exec after a tick, holding an abort listener meanwhile as the real transports do. */
function unreachableNode(label: string, held: { now: number; max: number }): ExecFakeTransport {
  return new ExecFakeTransport(async (_command: string, opts: ExecOptions): Promise<ExecResult> => {
    const onAbort = () => undefined;
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    held.max = Math.max(held.max, ++held.now);
    try {
      await new Promise((r) => setTimeout(r, 5));
      throw new Error(`${label}: connection refused`);
    } finally {
      held.now--;
      opts.signal?.removeEventListener('abort', onAbort);
    }
  }, label);
}

async function warningsDuring(fn: () => Promise<void>): Promise<string[]> {
  const seen: string[] = [];
  const onWarning = (w: Error) => seen.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  try {
    await fn();
    await new Promise((r) => setImmediate(r)); // warnings are emitted on the next tick
  } finally {
    process.off('warning', onWarning);
  }
  return seen;
}

describe('watch: abort listeners', () => {
  for (const count of [1, 12, 40]) {
    it(`watching ${count} node(s) at once prints no listener warning and leaves no listener`, async () => {
      const held = { now: 0, max: 0 };
      const nodes: NodeSpec[] = Array.from({ length: count }, (_, i) => ({ name: `n${i}`, host: `h${i}`, port: 22 }) as NodeSpec);
      const transports = new Map(nodes.map((n) => [n.name, unreachableNode(n.name, held)]));
      const pool = { get: (n: NodeSpec) => transports.get(n.name)! } as unknown as ConnectionPool;
      const ac = new AbortController();
      const out: string[] = [];
      let code = -1;
      const warnings = await warningsDuring(async () => {
        code = await cmdWatch(
          nodes,
          pool,
          { json: true, intervalS: 1, until: 'any', historyDir: null },
          { out: (s) => out.push(s), err: () => undefined },
          ac.signal,
        );
      });
      assert.equal(code, 8, 'unreachable first');
      assert.equal(held.max, count, 'every node held a listener at the same time');
      assert.deepEqual(
        warnings.filter((w) => /MaxListeners|memory leak/.test(w)),
        [],
      );
      assert.equal(getEventListeners(ac.signal, 'abort').length, 0, 'the caller signal keeps no listener');
    });
  }

  it("the watch's signal follows the caller's and lets go of it", () => {
    const ac = new AbortController();
    const w = watchSignal(ac.signal, 12);
    assert.equal(getEventListeners(ac.signal, 'abort').length, 1);
    ac.abort();
    assert.equal(w.signal.aborted, true);
    w.dispose();
    assert.equal(getEventListeners(ac.signal, 'abort').length, 0);
    const before = new AbortController();
    before.abort();
    assert.equal(watchSignal(before.signal, 1).signal.aborted, true, 'an already aborted caller');
  });
});
