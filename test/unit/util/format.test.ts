import assert from 'node:assert/strict';
import { formatBytes, formatDuration } from '../../../src/core/util/format';

describe('format', () => {
  it('formatDuration', () => {
    assert.deepEqual([0, 59, 60, 4800, 72 * 60, -300, 49 * 3600].map(formatDuration), [
      '0 s',
      '59 s',
      '1 min',
      '1 h 20 min',
      '1 h 12 min',
      '5 min',
      '2 d 1 h',
    ]);
  });

  it('formatBytes', () => {
    assert.deepEqual([0, 1023, 1024, 1536, 200 * 1024 * 1024].map(formatBytes), ['0 B', '1023 B', '1.0 KiB', '1.5 KiB', '200 MiB']);
  });
});
