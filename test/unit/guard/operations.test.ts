/**
 * The guard's operations (core/guard/operations): its python3 control run for real in a throw-away HOME (the
 * answer the parser reads is the node's own), a hostile state file, and salvage's secret-store rules applied by
 * the Python guard exactly as isSecretStore applies them (one definition, shipped as data).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { guardConfig, guardStatusOperation, guardStopOperation, GuardSettings, parseGuardStatus } from '../../../src/core/guard/operations';
import { GUARD_PY_FILES, guardPy } from '../../../src/core/guard/script';
import { isSecretStore } from '../../../src/core/salvage/plan/listing';
import type { RemoteOperation } from '../../../src/core/remote/operation';
import { execResult } from '../../helpers/fakeTransport';

function runLocal<T>(op: RemoteOperation<T>, home: string): T {
  const r = spawnSync('python3', ['-'], { input: op.stdin, env: { ...process.env, HOME: home }, timeout: 20_000 });
  return op.parse(execResult(r.stdout, { stderr: r.stderr, code: r.status }));
}

const SETTINGS: GuardSettings = {
  target: '/vol',
  s3Endpoint: null,
  intervalS: 60,
  data: null,
  whenDone: 'notify',
  idleMin: null,
  until: null,
  credentialExpires: null,
};

describe('guard operations (core/guard/operations)', () => {
  let home: string;
  beforeEach(() => (home = mkdtempSync(path.join(os.tmpdir(), 'gs-guard-unit-'))));
  afterEach(() => rmSync(home, { recursive: true, force: true }));

  it('status with no guard ever started: not running, empty journal; stop: nothing to stop', () => {
    const s = runLocal(guardStatusOperation(), home);
    assert.equal(s.running, false);
    assert.equal(s.pid, null);
    assert.deepEqual(s.journal, []);
    assert.equal(s.lastVerifiedSync, null);
    const st = runLocal(guardStopOperation(), home);
    assert.deepEqual(st, { wasRunning: false, stopped: false, pid: null });
  });

  it('a hostile state file and journal: wrong types dropped, a dead pid is not "running", bad lines skipped', () => {
    const d = path.join(home, '.gpu-sessions', 'guard');
    mkdirSync(d, { recursive: true });
    writeFileSync(
      path.join(d, 'state.json'),
      JSON.stringify({ pid: process.pid, bytesAtRisk: -5, lastVerifiedSync: { at: 7 }, roots: ['/w', 3], settings: 'x' }),
    );
    writeFileSync(
      path.join(d, 'journal.jsonl'),
      '{"t":"2026-12-04T03:12:00Z","event":"job-done","verdict":"safe"}\nnot json\n{"event":"no time"}\n[1]\n',
    );
    const s = runLocal(guardStatusOperation(), home);
    // this test's own pid is alive but does not run guard.py: not a guard
    assert.equal(s.running, false);
    assert.equal(s.bytesAtRisk, null);
    assert.equal(s.lastVerifiedSync, null);
    assert.deepEqual(s.roots, ['/w']);
    assert.equal(s.settings, null);
    assert.deepEqual(
      s.journal.map((e) => e.event),
      ['job-done'],
    );
  });

  it('the settings the node echoes are checked and bounded: kept as sent when they fit, else none', () => {
    const status = (settings: unknown) => parseGuardStatus({ running: false, state: { settings } }).settings;
    assert.deepEqual(status(SETTINGS), SETTINGS);
    assert.deepEqual(status({ ...SETTINGS, data: ['/w/out.jsonl'], idleMin: 30 }), { ...SETTINGS, data: ['/w/out.jsonl'], idleMin: 30 });
    assert.equal(status({ ...SETTINGS, target: { $: 1 } }), null);
    assert.equal(status({ ...SETTINGS, target: 'x'.repeat(5000) }), null, 'bounded');
    assert.equal(status({ ...SETTINGS, whenDone: 'rm -rf' }), null);
    assert.equal(status({ ...SETTINGS, intervalS: -1 }), null);
    assert.equal(status({ ...SETTINGS, data: [1] }), null);
    assert.equal(status(['x']), null);
  });

  it('an answer without the nonce line, or one that is not JSON, is an error in words', () => {
    const op = guardStatusOperation();
    assert.throws(
      () => op.parse(execResult('', { code: 127, stderr: Buffer.from('sh: python3: not found') })),
      /python3 is not on the node/,
    );
    assert.throws(() => op.parse(execResult('@@GSforged@@ {"running":true}\n', { code: 0 })), /did not answer/);
  });

  it("the Python guard applies salvage's secret-store rules as isSecretStore does (the same table)", () => {
    const cfg = guardConfig({ settings: SETTINGS, to: '/vol', replace: false }, 'GSa', 'GSb');
    const paths = [
      '/h/.ssh/id_ed25519',
      '/h/.ssh/id_ed25519.pub',
      '/h/.ssh/known_hosts',
      '/h/.ssh/config',
      '/h/work/id_rsa',
      '/h/.aws/credentials',
      '/h/.netrc',
      '/h/.config/rclone/rclone.conf',
      '/h/work/out/batch_1.jsonl',
      '/h/.ssh/authorized_keys2',
      '/h/.ssh/deploy_key',
    ];
    const script =
      guardPy('guard.py').replace(/\nif __name__ == "__main__":[\s\S]*$/, '\n') +
      `\ncfg = json.loads(sys.stdin.readline())\nfor p in json.loads(sys.stdin.readline()):\n` +
      `    print(selected(cfg, p, 1, []) == "secret-store")\n`;
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-guard-rules-'));
    try {
      writeFileSync(path.join(dir, 'g.py'), script);
      const r = spawnSync('python3', [path.join(dir, 'g.py')], { input: JSON.stringify(cfg) + '\n' + JSON.stringify(paths) + '\n' });
      assert.equal(r.status, 0, r.stderr.toString());
      const got = r.stdout.toString().trim().split('\n');
      assert.deepEqual(
        got,
        paths.map((p) => (isSecretStore(p) ? 'True' : 'False')),
      );
      assert.ok(got.includes('True') && got.includes('False'));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a scheduled shutdown (systemd, /run/nologin) cuts the wait short once and is journaled', () => {
    const marker = path.join(home, 'nologin');
    const script =
      guardPy('guard.py').replace(/\nif __name__ == "__main__":[\s\S]*$/, '\n') +
      `\nSHUTDOWN_FILES = (sys.argv[1],)\nos.makedirs(GUARD_DIR)\ng = Guard()\nprint(g.shutdown_coming())\n` +
      `open(sys.argv[1], "w").close()\nprint(g.shutdown_coming(), g.shutdown_coming())\n` +
      `print(json.loads(open(p("journal.jsonl")).read())["event"])\n`;
    writeFileSync(path.join(home, 'g.py'), script);
    const r = spawnSync('python3', [path.join(home, 'g.py'), marker], { env: { ...process.env, HOME: home } });
    assert.equal(r.status, 0, r.stderr.toString());
    assert.deepEqual(r.stdout.toString().trim().split('\n'), ['False', 'True False', 'shutdown-coming']);
  });

  it('guard.py, provider.py and seen.py pass pyflakes (Debian pyflakes3, as npm run lint)', function () {
    const root = path.resolve(__dirname, '..', '..', '..', '..');
    const files = GUARD_PY_FILES.map((f) => path.join(root, 'src', 'core', 'guard', f));
    const r = spawnSync('pyflakes3', files);
    assert.equal(r.status, 0, r.stdout.toString() + r.stderr.toString());
  });
});
