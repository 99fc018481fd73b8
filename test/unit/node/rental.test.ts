/**
 * The provider's price and end (issue 46 item 5), read on the node from the CLIs' real answers
 * (test/fixtures/provider: runpodctl 2.x `pod get` costPerHr, `vastai show instance --raw` dph_total and end_date),
 * which terms count (a flag or per-node setting over the provider, the provider over a default price) with their
 * sources, the read at most every 10 minutes, and the economics taking a price the provider told later.
 */
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  ProviderRentals,
  canReadRental,
  priceWithSource,
  readProviderRental,
  rentalTerms,
  rentalTermsJson,
  type ProviderRental,
} from '../../../src/core/node/rental';
import type { ProviderInfo } from '../../../src/core/provider/detect';
import { WatchEconomics } from '../../../src/core/node/spend';
import type { GuardSample } from '../../../src/core/node/guard';
import { ExecFakeTransport, execResult } from '../../helpers/fakeTransport';

const fx = (n: string) => readFileSync(path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'provider', n), 'utf8');
const pod: ProviderInfo = { name: 'runpod', instanceId: 'k3x9q2mzr7bt1a', evidence: [], actions: ['stop', 'terminate'] };
const vast: ProviderInfo = { name: 'vast', instanceId: '31415926', evidence: [], actions: ['stop', 'terminate'] };
const NOW = Date.parse('2026-12-04T12:00:00Z');

describe('provider rental: price and end from the node', () => {
  it('RunPod: costPerHr of `runpodctl pod get` (v2 JSON) with its source; no end (a pod runs until stopped)', async () => {
    const t = new ExecFakeTransport(() => execResult(fx('runpod-pod-get.json') + '\n@@rc=0@@\n'));
    const r = await readProviderRental(t, pod, undefined, () => NOW);
    assert.deepEqual(r, {
      provider: 'runpod',
      instanceId: 'k3x9q2mzr7bt1a',
      pricePerHour: 41.93,
      endsAt: null,
      state: 'running',
      source: 'runpodctl',
      readAt: '2026-12-04T12:00:00.000Z',
    });
    assert.equal(t.calls.length, 1);
    assert.match(String(t.calls[0].opts.stdin), /runpodctl pod get k3x9q2mzr7bt1a 2>/);
  });

  it('RunPod 1.x: the legacy table with -a gives $/HR', async () => {
    const t = new ExecFakeTransport(() => execResult('\n@@legacy@@\n' + fx('runpod-legacy-get-pod.txt')));
    assert.equal((await readProviderRental(t, pod))?.pricePerHour, 41.93);
  });

  it('Vast: dph_total and end_date (epoch seconds) of `vastai show instance --raw`', async () => {
    const t = new ExecFakeTransport(() => execResult(fx('vast-show-instance.json')));
    const r = await readProviderRental(t, vast);
    assert.deepEqual([r?.pricePerHour, r?.endsAt, r?.source], [23.871, new Date(1796637600 * 1000).toISOString(), 'vastai']);
    assert.match(String(t.calls[0].opts.stdin), /VAST_API_KEY="\$CONTAINER_API_KEY" vastai show instance 31415926 --raw/);
  });

  it('nothing is asked of a node that cannot tell; an error or an answer without figures is no rental', async () => {
    const t = new ExecFakeTransport(() => execResult('{"instances": null}'));
    for (const p of [
      null,
      { ...pod, actions: [] },
      { ...pod, instanceId: null },
      { name: 'aws', instanceId: 'i-0123456789abcdef0', evidence: [], actions: ['shutdown'] } as ProviderInfo,
    ]) {
      assert.equal(canReadRental(p), false);
      assert.equal(await readProviderRental(t, p), null);
    }
    assert.equal(t.calls.length, 0);
    assert.equal(await readProviderRental(t, vast), null, 'gone: no figures');
    const failing = new ExecFakeTransport(() => Promise.reject(new Error('connection reset')));
    assert.equal(await readProviderRental(failing, pod), null);
    const unauthorized = new ExecFakeTransport(() => execResult('{"error": true, "status_code": 401, "msg": "bad key"}'));
    assert.equal(await readProviderRental(unauthorized, vast), null);
  });
});

describe('rental terms: whose price and deadline count', () => {
  const provider: ProviderRental = {
    provider: 'vast',
    instanceId: '31415926',
    pricePerHour: 23.871,
    endsAt: '2026-12-07T18:00:00.000Z',
    state: 'running',
    source: 'vastai',
    readAt: '2026-12-04T12:00:00.000Z',
  };
  const setting = { value: 3.49, source: 'settings' };

  it("the provider's figures stand in for none, and over a default price", () => {
    const t = rentalTerms({ defaultPrice: setting }, provider);
    assert.deepEqual(rentalTermsJson(t), {
      pricePerHour: 23.871,
      priceSource: 'vastai',
      deadline: '2026-12-07T18:00:00.000Z',
      deadlineSource: 'vastai',
    });
    assert.equal(priceWithSource(t), '$23.871/h from vastai');
  });

  it("a flag or per-node setting overrides the provider's price and end", () => {
    const at = new Date('2026-12-05T06:00:00Z');
    const t = rentalTerms({ price: setting, deadline: { at, source: '--deadline' } }, provider);
    assert.deepEqual([t.pricePerHour, t.priceSource, t.deadline, t.deadlineSource], [3.49, 'settings', at, '--deadline']);
    assert.equal(priceWithSource(t), '$3.49/h from settings');
  });

  it('without the provider: the default price; with nothing, no terms', () => {
    assert.deepEqual(rentalTerms({ defaultPrice: setting }, null), {
      pricePerHour: 3.49,
      priceSource: 'settings',
      deadline: null,
      deadlineSource: null,
    });
    const none = rentalTerms({}, { ...provider, pricePerHour: null, endsAt: null });
    assert.deepEqual([none.pricePerHour, none.deadline, priceWithSource(none)], [null, null, null]);
  });
});

describe('ProviderRentals: at most one read per node every 10 minutes', () => {
  it('reads when due, answers the last read meanwhile, one read in flight per node', async () => {
    let now = NOW;
    let price = 41.93;
    const t = new ExecFakeTransport(() => execResult(fx('runpod-pod-get.json').replace('41.93', String(price)) + '\n@@rc=0@@\n'));
    const rentals = new ProviderRentals(600_000, () => now);
    assert.equal(rentals.due('gpu-a'), true);
    const [a, b] = await Promise.all([rentals.refresh('gpu-a', t, pod), rentals.refresh('gpu-a', t, pod)]);
    assert.equal(t.calls.length, 1, 'one read in flight');
    assert.equal(a?.pricePerHour, 41.93);
    assert.equal(b, a);
    price = 39.5;
    now += 599_000;
    assert.equal((await rentals.refresh('gpu-a', t, pod))?.pricePerHour, 41.93, 'not due yet');
    assert.equal(t.calls.length, 1);
    now += 1000;
    assert.equal((await rentals.refresh('gpu-a', t, pod))?.pricePerHour, 39.5);
    assert.equal(rentals.get('gpu-a')?.pricePerHour, 39.5);
    // a failed read keeps the instance's last answer
    const down = new ExecFakeTransport(() => Promise.reject(new Error('connection reset')));
    now += 600_000;
    assert.equal((await rentals.refresh('gpu-a', down, pod))?.pricePerHour, 39.5);
    assert.equal(rentals.due('gpu-a'), false);
    assert.equal(await rentals.refresh('gpu-b', down, { ...pod, instanceId: 'other' }), null);
    // a node that no longer tells (its provider CLI gone) forgets what it said
    assert.equal(await rentals.refresh('gpu-a', t, { ...pod, actions: [] }), null);
    assert.equal(rentals.get('gpu-a'), null);
    assert.equal(rentals.due('gpu-a'), true);
  });
});

describe('WatchEconomics.setTerms: a price the provider tells after the first samples', () => {
  const sample = (time: number, gen: number): GuardSample =>
    ({
      type: 'sample',
      node: 'gpu-a',
      time: new Date(time).toISOString(),
      reachable: true,
      uptimeS: 3600,
      servers: [{ port: 30000, state: 'serving', genThroughput: gen, generationTokensTotal: null }],
      job: { state: 'unknown', etaS: null },
    }) as unknown as GuardSample;

  it('nothing before, spend with its source after; the deadline keeps its source', () => {
    const e = new WatchEconomics({ now: () => NOW });
    assert.equal(e.active, false);
    assert.deepEqual(e.annotate(sample(NOW, 1000)), {});
    e.setTerms({ pricePerHour: 41.93, priceSource: 'runpodctl', deadline: new Date(NOW + 7200_000), deadlineSource: 'vastai' });
    assert.equal(e.active, true);
    const x = e.annotate(sample(NOW + 10_000, 1000));
    assert.equal(x.spend?.perHour, 41.93);
    assert.equal(x.spend?.priceSource, 'runpodctl');
    assert.equal(x.spend?.total, 41.93, 'an hour of uptime at the told price');
    assert.ok((x.spend?.outputTokens ?? 0) > 0, 'the tokens of the samples before the price were counted');
    assert.equal(x.deadline?.source, 'vastai');
    assert.equal(x.deadline?.secondsLeft, 7190);
  });
});
