import * as assert from 'node:assert/strict';
import { StableFigure, roundSig } from '../../../src/core/util/stableFigure';

describe('StableFigure: one money figure that does not wobble', () => {
  it('noise within the band keeps the shown value; a real change moves it', () => {
    const f = new StableFigure(0.1);
    assert.equal(f.next(1.0312), 1);
    for (const v of [0.95, 1.05, 0.97, 1.08, 0.93]) assert.equal(f.next(v), 1, String(v));
    assert.equal(f.next(1.42), 1.4);
    assert.equal(f.next(null), 1.4);
  });
  it('two significant digits', () => {
    assert.equal(roundSig(0.8347, 2), 0.83);
    assert.equal(roundSig(1234, 2), 1200);
    assert.equal(roundSig(0, 2), 0);
  });
});
