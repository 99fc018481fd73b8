/** core/flows/release: the drain's Stop now and its progress text (issue 43, item 4: Release's drain is Stop Server's). */
import assert from 'node:assert/strict';
import { drainProgressText, executeRelease, ReleasePlan } from '../../../src/core/flows/release';
import type { SglangServer } from '../../../src/core/sglang/serverArgv';

const server = (port: number) => ({ port, pid: 1000 + port, flags: {}, gpus: [] }) as unknown as SglangServer;

describe('release: the drain (core/flows/release)', () => {
  it('Stop now ends the drain at once and goes on to the salvage (servers stopped there), each reading reported', async () => {
    const plan: ReleasePlan = { node: 'b', targets: [], servers: [server(30001), server(30002)], probes: new Map(), skipped: [] };
    let stop = false;
    const readings: Array<[number, number | null]> = [];
    let salvagedWith: number[] = [];
    const t0 = Date.now();
    setTimeout(() => (stop = true), 300);
    const r = await executeRelease(plan, new Map([['b', {} as never]]), {
      drainTimeoutMs: 60_000,
      loadOf: async (_t, s) => (s.port === 30001 ? 4 : null),
      stopNow: () => stop,
      onDrain: (d) => readings.push([d.port, d.running]),
      salvage: async (servers) => {
        salvagedWith = servers.map((s) => s.port);
        return { verdict: 'safe', dest: '/tmp/x' };
      },
    });
    assert.ok(Date.now() - t0 < 2000, `ended ${Date.now() - t0} ms after the start, not at the 60 s deadline`);
    assert.deepEqual(salvagedWith, [30001, 30002], 'the salvage stops them');
    assert.deepEqual(
      r.drained.map((d) => [d.port, d.runningAtStart]),
      [
        [30001, 4],
        [30002, null],
      ],
    );
    assert.ok(readings.some(([p, n]) => p === 30001 && n === 4));
  });

  it('its progress: seconds left, what still runs, and "new requests keep arriving" once the total grows', () => {
    const m = new Map<number, number | null>([
      [30001, 3],
      [30002, 0],
    ]);
    assert.equal(drainProgressText(m, 3, 272_400), 'draining :30001 3 running · 272 s left (then stopped)');
    m.set(30002, 2);
    assert.equal(
      drainProgressText(m, 3, 200_000),
      'draining :30001 3, :30002 2 running · 200 s left (then stopped) · new requests keep arriving: 5',
    );
    assert.equal(drainProgressText(new Map([[30001, 0]]), 0, -5), 'drained · 0 s left (then stopped)');
    assert.equal(drainProgressText(new Map([[30001, null]]), null, 1000), 'draining :30001 ? running · 1 s left (then stopped)');
  });
});
