import * as assert from 'node:assert/strict';
import { staleReason, verdictStamp } from '../../../../src/core/salvage/report/verdictStamp';

type P = Parameters<typeof verdictStamp>[0];
const probe = (o: Partial<P> = {}): P => ({
  servers: [
    { port: 30000, pid: 11 },
    { port: 30001, pid: 12 },
  ] as P['servers'],
  uptimeS: 3600,
  probedAt: '2026-12-02T00:10:00.000Z',
  artifacts: [{ path: '/home/u/logs/a.log', kind: 'log', size: 100, mtime: '2026-12-02T00:00:00Z' }],
  ...o,
});

describe('verdictStamp: a salvage verdict holds only while the node is as it was', () => {
  it('the same node a minute later (the uptime moved with the clock, a file touched) still matches', () => {
    const a = verdictStamp(probe());
    const b = verdictStamp(
      probe({
        probedAt: '2026-12-02T00:11:00.000Z',
        uptimeS: 3660,
        artifacts: [{ path: '/home/u/logs/a.log', kind: 'log', size: 100, mtime: '2026-12-02T00:10:30Z' }],
      }),
    );
    assert.equal(staleReason(a, b), null);
  });

  it('a restarted server (new pid on the same port) makes it stale', () => {
    const a = verdictStamp(probe());
    const b = verdictStamp(
      probe({
        servers: [
          { port: 30000, pid: 11 },
          { port: 30001, pid: 99 },
        ] as P['servers'],
      }),
    );
    assert.equal(staleReason(a, b), 'servers changed');
  });

  it('servers started after a salvage that stopped them make it stale', () => {
    const a = verdictStamp(probe({ servers: [] }));
    assert.equal(staleReason(a, verdictStamp(probe())), 'servers changed');
  });

  it('a reboot (boot time moved) makes it stale', () => {
    const a = verdictStamp(probe());
    const b = verdictStamp(probe({ uptimeS: 60 }));
    assert.equal(staleReason(a, b), 'rebooted');
  });

  it('a file that grew or appeared makes it stale', () => {
    const a = verdictStamp(probe());
    const grew = verdictStamp(probe({ artifacts: [{ path: '/home/u/logs/a.log', kind: 'log', size: 101, mtime: '' }] }));
    assert.equal(staleReason(a, grew), 'files changed');
    const added = verdictStamp(
      probe({
        artifacts: [
          { path: '/home/u/logs/a.log', kind: 'log', size: 100, mtime: '' },
          { path: '/home/u/out.jsonl', kind: 'log', size: 1, mtime: '' },
        ],
      }),
    );
    assert.equal(staleReason(a, added), 'files changed');
  });
});
