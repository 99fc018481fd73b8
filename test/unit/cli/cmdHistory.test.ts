/** `gpu-sessions history` (cli/cmdHistory) over a history file with junk lines in it (#24 h2). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cmdHistory } from '../../../src/cli/cmdHistory';
import { HistoryStore, historyFileName } from '../../../src/core/node/history';

const time = () => new Date().toISOString();
const sample = (extra: Record<string, unknown> = {}) => ({
  type: 'sample',
  node: 'n',
  time: time(),
  reachable: true,
  message: null,
  genThroughput: 12,
  runningReqs: 1,
  servers: [{ port: 30000, state: 'serving' }],
  gpus: [{ index: 0, state: 'ok' }],
  disks: [],
  job: { state: 'unknown', percent: null },
  ...extra,
});
const transition = (extra: Record<string, unknown> = {}) => ({
  type: 'transition',
  node: 'n',
  time: time(),
  subject: 'server',
  port: 30000,
  from: 'ready',
  to: 'crashed',
  message: 'boom',
  ...extra,
});

describe('cmdHistory: junk entries', () => {
  let dir: string;
  beforeEach(() => (dir = mkdtempSync(path.join(os.tmpdir(), 'gs-cmdhist-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  const run = (lines: unknown[], json = false) => {
    writeFileSync(
      path.join(dir, historyFileName('n')),
      lines.map((l) => (typeof l === 'string' ? l : JSON.stringify(l))).join('\n') + '\n',
    );
    let out = '';
    let err = '';
    const code = cmdHistory('n', { json, dir }, { out: (s) => (out += s), err: (s) => (err += s) });
    return { code, out, err };
  };

  it('misshapen entries are skipped and counted, every other entry is printed, a message cannot print lines of its own', () => {
    const r = run([
      sample({ runningReqs: 1 }),
      sample({ servers: [null] }),
      sample({ gpus: 'x' }),
      sample({ disks: [{ state: 'ok' }] }),
      sample({ job: null }),
      sample({ job: { state: 'running' } }),
      sample({ spend: { total: 1 } }),
      sample({ data: [7] }),
      { type: 'sample', time: time(), reachable: true },
      transition({ message: null }),
      transition({ to: 3 }),
      '{"type":"sample","time":',
      transition({ message: 'first\nFAKE: verdict safe\r\nx' }),
      sample({ reachable: false, message: 'down' }),
      sample({ runningReqs: 2 }),
    ]);
    assert.equal(r.code, 0, r.err);
    const lines = r.out.split('\n').filter(Boolean);
    assert.equal(lines.length, 4, r.out);
    assert.match(lines[0], /1 run/);
    assert.match(lines[1], /:30000 ready → crashed {2}first FAKE: verdict safe x$/);
    assert.match(lines[2], /unreachable: down/);
    assert.match(lines[3], /2 run/);
    assert.match(r.err, /^11 malformed lines of .* skipped\.\n$/);
  });

  it('--json prints the entries the store kept (their fields shaped), junk skipped', () => {
    const r = run([sample(), sample({ servers: [null] }), { type: 'note', time: time() }, transition()], true);
    assert.equal(r.code, 0, r.err);
    assert.deepEqual(
      r.out
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l).type),
      ['sample', 'note', 'transition'],
    );
    assert.match(r.err, /^1 malformed line of /);
  });

  it('the store skips what would crash a reader (the dashboard maps servers[].port) and counts it', () => {
    writeFileSync(
      path.join(dir, historyFileName('n')),
      [sample(), sample({ servers: [null] }), sample({ servers: 'x' }), '42', 'null', sample()]
        .map((l) => (typeof l === 'string' ? l : JSON.stringify(l)))
        .join('\n'),
    );
    const h = new HistoryStore(dir, 'n');
    assert.equal(h.all().length, 2);
    assert.equal(h.skipped, 4);
  });
});
