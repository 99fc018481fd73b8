import * as assert from 'node:assert/strict';
import { StoppedByYou } from '../../../src/extension/stoppedByYou';

/** A server the extension stopped is no alert until it runs again after it had gone (issue 30). */
describe('StoppedByYou: a stop is not an alert', () => {
  it('a server still answering while it stops (idle → serving → crashed) stays "stopped by you"', () => {
    const s = new StoppedByYou();
    s.mark('n', 30001, 1000);
    assert.equal(s.judge('n', 30001, 'idle', 'serving'), true);
    assert.equal(s.judge('n', 30001, 'serving', 'crashed'), true);
    assert.equal(s.at('n', 30001), 1000);
  });

  it('a server that runs again after it had gone is watched again: its next crash is an alert', () => {
    const s = new StoppedByYou();
    s.mark('n', 30001);
    assert.equal(s.judge('n', 30001, 'serving', 'crashed'), true);
    assert.equal(s.judge('n', 30001, 'crashed', 'starting'), false);
    assert.equal(s.at('n', 30001), undefined);
    assert.equal(s.judge('n', 30001, 'serving', 'crashed'), false);
  });

  it('an unmarked server is judged an alert', () => {
    assert.equal(new StoppedByYou().judge('n', 30002, 'serving', 'crashed'), false);
  });
});
