import * as assert from 'node:assert/strict';
import { clientResume, startClientOperation } from '../../../src/core/restore/client';
import { findClient } from '../../../src/core/salvage/capture/restoreCapture';
import type { RestoreCapture } from '../../../src/core/salvage/capture/restoreCapture';

const cap = (argv: string[], envNames = ['PATH', 'HF_TOKEN', 'VIRTUAL_ENV']): RestoreCapture => ({
  version: 1,
  capturedAt: '',
  home: '/root',
  profile: null,
  profileErrors: [],
  servers: [],
  client: { pid: 7, argv, cwd: '/root/job', envNames },
  modes: {},
  problems: [],
});
const maps = [{ from: '/root', to: '/home/u' }];

describe('restore generation client', () => {
  it('maps the working folder and path arguments, quotes every word', () => {
    const r = clientResume(cap(['python3', 'gen.py', '--out', '/root/job/out', '--prompts=/root/p.jsonl', "it's"]), maps)!;
    assert.equal(r.cwd, '/home/u/job');
    assert.deepEqual(r.argv, ['python3', 'gen.py', '--out', '/home/u/job/out', '--prompts=/home/u/p.jsonl', "it's"]);
    assert.equal(r.command, `cd /home/u/job && python3 gen.py --out /home/u/job/out --prompts=/home/u/p.jsonl 'it'\\''s'`);
    assert.deepEqual(r.secretEnv, ['HF_TOKEN']);
    assert.equal(r.blocked, null);
    assert.match(startClientOperation(r).command, /^setsid sh -c /);
  });

  it('a command line with a redacted secret is printed, never started', () => {
    const r = clientResume(cap(['python3', 'gen.py', '--api-key', '<redacted>']), maps)!;
    assert.match(r.blocked ?? '', /secret/);
  });

  it('finds the client: a process that talks to a server, not a shell or a server', () => {
    const p = (pid: number, argv: string[], evidence: string) => ({ pid, ppid: 1, cwd: '/root', argv, fds: [], evidence });
    const L = {
      servers: [{ pid: 10 } as never],
      writers: [],
      processes: [p(10, ['python3', '-m', 'sglang.launch_server'], 'sn'), p(11, ['bash'], 'cn'), p(12, ['python3', 'gen.py'], 'cn')],
    };
    assert.equal(findClient(L)?.pid, 12);
    assert.equal(findClient({ ...L, processes: L.processes.slice(0, 2) }), null);
  });
});
