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

  it('the mark belongs to the stopped process: a new pid on the port, or a server loading again, ends it (issue 43)', () => {
    const s = new StoppedByYou();
    s.mark('n', 30001, 1000, 4242);
    s.observe('n', 30001, 4242);
    assert.equal(s.at('n', 30001), 1000, 'the same process: still stopped by you');
    s.observe('n', 30001, 5151);
    assert.equal(s.at('n', 30001), undefined, 'a restart: another process');
    assert.equal(s.judge('n', 30001, 'serving', 'crashed'), false, 'its later death is an alert');
    s.mark('n', 30002, 1000);
    assert.equal(s.judge('n', 30002, 'idle', 'starting'), false);
    assert.equal(s.at('n', 30002), undefined, 'loading again (a restart seen as starting) ends the mark');
  });
});
