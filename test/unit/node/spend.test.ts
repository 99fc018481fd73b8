import assert from 'node:assert/strict';
import { deadlineAt, deadlineRow } from '../../../src/core/node/spend';

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
