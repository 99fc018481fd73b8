/** The guard's start options from flags (core/guard/flow): exactly one target, bounded numbers, an ISO --until in the future. */
import assert from 'node:assert/strict';
import { guardStartOptions } from '../../../src/core/flows/guard';

const usage = (m: string): never => {
  throw new Error(m);
};
const opts = (v: Record<string, string | boolean | undefined>) => guardStartOptions(v, false, usage);

describe('guard start options (core/guard/flow)', () => {
  it('defaults: interval 300 s, notify, data discovered, no idle, no until', () => {
    const o = opts({ to: '~/vol' });
    assert.equal(o.intervalS, 300);
    assert.equal(o.whenDone, 'notify');
    assert.deepEqual(o.data, []);
    assert.equal(o.idleMin, null);
    assert.equal(o.until, null);
    assert.deepEqual(opts({ to: '/w', data: 'a.jsonl,b.jsonl' }).data, ['a.jsonl', 'b.jsonl']);
  });

  it('refuses what is not the contract, in words', () => {
    assert.throws(() => opts({}), /exactly one of --s3/);
    assert.throws(() => opts({ to: '/w', s3: 's3://b/p' }), /exactly one of --s3/);
    assert.throws(() => opts({ s3: 'http://b/p' }), /s3:\/\/bucket\/prefix/);
    assert.throws(() => opts({ to: 'relative' }), /absolute folder/);
    assert.throws(() => opts({ to: '/w', 's3-endpoint': 'http://x' }), /only applies with --s3/);
    assert.throws(() => opts({ to: '/w', interval: '0' }), /--interval/);
    assert.throws(() => opts({ to: '/w', 'when-done': 'reboot' }), /notify, stop or terminate/);
    assert.throws(() => opts({ to: '/w', idle: '-1' }), /--idle/);
    assert.throws(() => opts({ to: '/w', until: 'tomorrow' }), /ISO time/);
    assert.throws(() => opts({ to: '/w', until: '2020-01-01T00:00:00Z' }), /in the past/);
    assert.throws(() => opts({ to: '/w', thresholds: 'nope=1' }), /--thresholds/);
  });

  it('--until is kept as an ISO instant in UTC', () => {
    const t = new Date(Date.now() + 3600_000);
    assert.equal(opts({ to: '/w', until: t.toISOString() }).until, t.toISOString());
  });
});
