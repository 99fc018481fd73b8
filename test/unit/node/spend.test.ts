import assert from 'node:assert/strict';
import { WatchEconomics, deadlineAt, deadlineRow, perMillion, perMillionPhrase } from '../../../src/core/node/spend';
import type { GuardSample } from '../../../src/core/node/guard';
import { formatDuration } from '../../../src/core/util/format';

describe('rental deadline countdown row (the tree) from the deadline figures', () => {
  const now = Date.UTC(2026, 11, 1, 12);
  const lead = 30 * 60;
  const at = (s: number) => new Date(now + s * 1000);

  it('ends in 1 h 12 min, job ETA unknown: no comparison, no warning', () => {
    const r = deadlineRow(deadlineAt(at(72 * 60), now, null), lead);
    assert.deepEqual(r, { label: 'Rental ends in 1 h 12 min', detail: null, state: 'ok' });
  });

  it('the job would run 1 h 20 min past the rental: said so', () => {
    const r = deadlineRow(deadlineAt(at(72 * 60), now, 72 * 60 + 80 * 60), lead);
    assert.equal(r.label, 'Rental ends in 1 h 12 min');
    assert.equal(r.detail, 'at the current rate the job ends 1 h 20 min after the rental');
    assert.equal(r.state, 'ok');
  });

  it('the job ends first: before it', () => {
    const r = deadlineRow(deadlineAt(at(3 * 3600), now, 3600), lead);
    assert.equal(r.detail, 'at the current rate the job ends 2 h 0 min before it');
  });

  it('under the lead time: near (the warning icon); at the lead time exactly too', () => {
    assert.equal(deadlineRow(deadlineAt(at(29 * 60), now, null), lead).state, 'near');
    assert.equal(deadlineRow(deadlineAt(at(30 * 60), now, null), lead).state, 'near');
    assert.equal(deadlineRow(deadlineAt(at(31 * 60), now, null), lead).state, 'ok');
    assert.equal(deadlineRow(deadlineAt(at(45), now, null), lead).label, 'Rental ends in 45 s');
  });

  it('past the end: ended, "ended … ago"', () => {
    const r = deadlineRow(deadlineAt(at(-5 * 60), now, 600), lead);
    assert.equal(r.label, 'Rental ended 5 min ago');
    assert.equal(r.state, 'ended');
    assert.equal(r.detail, 'at the current rate the job ends 15 min after the rental');
  });

  it('the message the CLI and the status bar show is the same two phrases', () => {
    const d = deadlineAt(at(72 * 60), now, 72 * 60 + 80 * 60);
    const r = deadlineRow(d, lead);
    assert.equal(d.message, `the rental ends in 1 h 12 min; ${r.detail}`);
  });
});

describe('spend and deadline arithmetic', () => {
  /** One server on port 30000: `gen` tok/s, its counter `tokens` (null: no --enable-metrics). */
  const sample = (time: number, gen: number, uptimeS: number | null, tokens: number | null = null): GuardSample =>
    multi(time, uptimeS, [{ port: 30000, gen, tokens }]);
  const multi = (time: number, uptimeS: number | null, servers: Array<{ port: number; gen: number; tokens: number | null }>): GuardSample =>
    ({
      type: 'sample',
      node: 'n',
      time: new Date(time).toISOString(),
      reachable: true,
      message: null,
      genThroughput: servers.reduce((a, b) => a + b.gen, 0),
      runningReqs: 1,
      servers: servers.map((x) => ({ port: x.port, state: 'serving', genThroughput: x.gen, generationTokensTotal: x.tokens })),
      gpus: [],
      disks: [],
      job: { state: 'running', percent: 50, etaS: 7200, completed: 1, total: 2, outputTokens: null },
      uptimeS,
      generationTokensTotal: null,
    }) as unknown as GuardSample;

  it('three servers, one with metrics: every server counts, over the same period as total (issue 23)', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 12.5, now: () => t0 });
    // the harness's node: 1,409 tok/s on the server with --enable-metrics, 4,141 tok/s in all
    const at = (i: number) =>
      multi(t0 + i * 1000, null, [
        { port: 30000, gen: 1409, tokens: 9_000_000 + 1409 * i },
        { port: 30001, gen: 1366, tokens: null },
        { port: 30002, gen: 1366, tokens: null },
      ]);
    const first = e.annotate(at(0)).spend!;
    let last = first;
    for (let i = 1; i <= 60; i++) last = e.annotate(at(i)).spend!;
    // tokens grow at the node's whole rate (all three servers), not at the metrics server's alone
    assert.equal((last.outputTokens - first.outputTokens) / 60, 4141);
    assert.equal(last.outputTokens, 4141 * 60);
    // one period for both: total / outputTokens × 1e6 is perMillionTokens, on the same sample
    assert.ok(Math.abs(last.perMillionTokens! - (last.total / last.outputTokens) * 1e6) < 1e-3, JSON.stringify(last));
    assert.ok(Math.abs(last.perMillionTokensNow! - (12.5 / (4141 * 3600)) * 1e6) < 1e-3, JSON.stringify(last));
  });

  it('with the uptime known, a counter counts from its server start (within the rental), restarts carried over', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 10, now: () => t0 });
    e.annotate(multi(t0, 3600, [{ port: 1, gen: 100, tokens: 1_000_000 }]));
    e.annotate(multi(t0 + 1000, 3601, [{ port: 1, gen: 100, tokens: 1_000_100 }]));
    const r = e.annotate(multi(t0 + 2000, 3602, [{ port: 1, gen: 100, tokens: 50 }])).spend!;
    assert.equal(r.outputTokens, 1_000_150);
    assert.ok(Math.abs(r.perMillionTokens! - (r.total / r.outputTokens) * 1e6) < 1e-3);
  });

  it('$ per million tokens from the integrated throughput equals price / (rate × 3600) × 1e6', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 12.5, now: () => t0 });
    let last;
    for (let i = 0; i <= 60; i++) last = e.annotate(sample(t0 + i * 10_000, 14_000, null));
    const expected = (12.5 / (14_000 * 3600)) * 1e6;
    assert.ok(Math.abs(last!.spend!.perMillionTokens! - expected) < 1e-3, `${last!.spend!.perMillionTokens} vs ${expected}`);
    assert.ok(Math.abs(last!.spend!.perMillionTokensNow! - expected) < 1e-3);
    assert.ok(Math.abs(last!.spend!.total - 12.5 * (600 / 3600)) < 1e-3);
    assert.equal(last!.spend!.outputTokens, 14_000 * 600);
  });

  it('the window figure is one stable value at a constant rate, though the node booted hours before the servers (issue 30, item 9)', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 12.5, now: () => t0 });
    // booted 10 h ago, the servers started 5 min ago: "so far" is spend since boot over a few minutes of tokens
    const at = (i: number) => multi(t0 + i * 5000, 36_000 + i * 5, [{ port: 1, gen: 14_000, tokens: 14_000 * (300 + i * 5) }]);
    const first = e.annotate(at(0)).spend!;
    assert.equal(first.perMillionTokensWindow, null, 'no window figure before a minute of samples');
    assert.equal(
      perMillionPhrase(first),
      `$${first.perMillionTokens!.toFixed(2)} per million output tokens so far, $0.25 at the current rate`,
    );
    const windowed: number[] = [];
    const soFar: number[] = [];
    for (let i = 1; i <= 400; i++) {
      const sp = e.annotate(at(i)).spend!;
      if (sp.perMillionTokensWindow != null) windowed.push(sp.perMillionTokensWindow);
      soFar.push(sp.perMillionTokens!);
    }
    const expected = (12.5 / (14_000 * 3600)) * 1e6;
    assert.ok(windowed.length > 380);
    for (const v of windowed) assert.ok(Math.abs(v - expected) < 1e-3, `${v} vs ${expected}`);
    assert.ok(soFar[0] / soFar[soFar.length - 1] > 2, 'the "so far" figure keeps falling: not the one to show');
    const last = e.annotate(at(401)).spend!;
    assert.equal(last.windowS, 600, 'the window is 10 minutes once that much is sampled');
    assert.equal(perMillionPhrase(last), '$0.25 per million output tokens over the last 10 min');
  });

  it('spend counts from the node boot (uptime); counters win over integration', () => {
    const t0 = Date.UTC(2026, 0, 1);
    const e = new WatchEconomics({ pricePerHour: 10, now: () => t0 });
    e.annotate(sample(t0, 1000, 7200, 5_000_000));
    const r = e.annotate(sample(t0 + 3_600_000, 1000, 10_800, 8_600_000));
    assert.equal(r.spend!.total, 30);
    assert.equal(r.spend!.outputTokens, 8_600_000);
    assert.ok(Math.abs(r.spend!.perMillionTokens! - (30 / 8_600_000) * 1e6) < 1e-3);
  });

  it('deadline: seconds left, the job ETA against it, deadline-near once at the lead time', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const d = deadlineAt(new Date(now + 3600_000), now, 7200 + 1200);
    assert.equal(d.secondsLeft, 3600);
    assert.equal(d.jobOverrunS, 4800);
    assert.match(d.message, /job ends 1 h 20 min after the rental/);
    assert.equal(formatDuration(4800), '1 h 20 min');
    assert.equal(perMillion(1, 0), null);
    const e = new WatchEconomics({ deadline: new Date(now + 40 * 60_000), leadMs: 30 * 60_000, now: () => now });
    const a = e.annotate(sample(now, 1, null));
    // the job runs 1 h 20 min past the end: said once, at once (issue 43); the lead time is not reached yet
    assert.deepEqual(
      e.transitions(sample(now, 1, null), a).map((t) => t.to),
      ['job-overrun'],
    );
    const later = sample(now + 11 * 60_000, 1, null);
    const b = e.annotate(later);
    const tr = e.transitions(later, b);
    assert.equal(tr.length, 1);
    assert.equal(tr[0].to, 'deadline-near');
    assert.deepEqual(e.transitions(later, b), [], 'once');
  });

  it('job-overrun once when the ETA runs past the rental end; rental-ended once when it has passed (issue 43)', () => {
    const now = Date.UTC(2026, 0, 1, 12);
    const e = new WatchEconomics({ deadline: new Date(now + 60 * 60_000), leadMs: 30 * 60_000, now: () => now });
    const s0 = sample(now, 1, null);
    const over = { deadline: deadlineAt(new Date(now + 60 * 60_000), now, 2 * 3600) };
    assert.deepEqual(
      e.transitions(s0, over).map((t) => t.to),
      ['job-overrun'],
    );
    assert.deepEqual(e.transitions(s0, over), [], 'once');
    const end = sample(now + 61 * 60_000, 1, null);
    const past = { deadline: deadlineAt(new Date(now + 60 * 60_000), now + 61 * 60_000, null) };
    assert.deepEqual(
      e.transitions(end, past).map((t) => t.to),
      ['rental-ended'],
      'past the end: rental-ended (no deadline-near after the fact)',
    );
    assert.deepEqual(e.transitions(end, past), [], 'once');
  });
});
