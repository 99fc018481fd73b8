/**
 * The simulated pod (issue 46 item 6): the sim home's `runpodctl` stand-in answers the real formats that the
 * product's parsers read (v2 JSON, the legacy table, a 404 once deleted), records stop/delete with the key that ran
 * them, ends the "container" after the call, and can be told to "succeed" while the pod keeps RUNNING.
 */
import { strict as assert } from 'node:assert';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { endOperation, localStatusOperation, parseStatusOutput, statusOperation } from '../../../src/core/provider/actions';
import type { ProviderInfo } from '../../../src/core/provider/detect';
import { actionVerified, parseRunpodLegacyTable, parseRunpodPodGet } from '../../../src/core/provider/status';
import { buildSimHome, SimNodeLayout } from '../../../src/sim/home';
import { readSimPod, readSimVast, setSimPodKnobs, simContainerDead } from '../../../src/sim/provider';
import { waitFor } from '../../helpers/wait';

describe('simulated RunPod pod (runpodctl stand-in)', function () {
  this.timeout(30_000);
  let dir = '';
  let L: SimNodeLayout;
  let rp: ProviderInfo & { instanceId: string };
  beforeEach(() => {
    dir = mkdtempSync(path.join(tmpdir(), 'gs-simpod-'));
    L = buildSimHome(path.join(dir, 'home'), { gpuCount: 2, provider: 'runpod' });
    rp = { name: 'runpod', instanceId: L.provider!.instanceId, evidence: [], actions: ['stop', 'terminate'] };
    setSimPodKnobs(L.home, { dieAfterS: 0.1 });
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const env = (extra: Record<string, string> = {}) => ({ PATH: L.env.PATH, HOME: L.home, ...extra });
  const ctl = (args: string[], extra: Record<string, string> = L.provider!.env) =>
    spawnSync(path.join(L.home, 'bin', 'runpodctl'), args, { env: env(extra), encoding: 'utf8' });
  const sh = (stdin: string, extra: Record<string, string> = L.provider!.env) =>
    execFileSync('sh', ['-s'], { input: stdin, env: env(extra) }).toString();

  it("the node's environment names the pod and its key; pod get is runpodctl v2's JSON (RUNNING, price)", () => {
    assert.equal(L.env.RUNPOD_POD_ID, L.provider!.instanceId);
    assert.match(L.env.RUNPOD_API_KEY, /^rpa_/);
    const r = ctl(['pod', 'get', rp.instanceId]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /^\{\n {2}"costPerHr": /);
    const s = parseRunpodPodGet(r.stdout, r.stderr, r.status);
    assert.deepEqual([s.state, s.word, s.pricePerHour], ['running', 'RUNNING', 11.98]);
    const legacy = ctl(['get', 'pod', rp.instanceId, '-a']);
    assert.match(legacy.stderr, /^warning: 'runpodctl get pod' is deprecated/);
    assert.deepEqual(parseRunpodLegacyTable(legacy.stdout, rp.instanceId).state, 'running');
  });

  it('stop through the product: one recorded call with the pod key, EXITED right after, then the container ends', async () => {
    const op = endOperation(rp, 'stop');
    const res = op.parse({ stdout: Buffer.from(sh(String(op.stdin))), stderr: Buffer.alloc(0), code: 0, truncated: false });
    assert.equal(res.code, 0);
    assert.match(res.said, /"desiredStatus": "EXITED"/);
    assert.equal(res.status?.word, 'EXITED');
    assert.ok(res.status && actionVerified('stop', res.status));
    assert.deepEqual(
      readSimPod(L.home)!.calls.map((c) => [c.verb, c.id, c.key]),
      [['stop', rp.instanceId, 'pod']],
    );
    await waitFor('the container to end', () => simContainerDead(L.home), 10_000);
  });

  it('delete: gone (404) afterwards; the legacy table lists no pod', () => {
    const op = endOperation(rp, 'terminate');
    const res = op.parse({ stdout: Buffer.from(sh(String(op.stdin))), stderr: Buffer.alloc(0), code: 0, truncated: false });
    assert.match(res.said, /"deleted": true/);
    assert.equal(res.status?.state, 'terminated');
    assert.equal(parseStatusOutput('runpod', rp.instanceId, sh(String(statusOperation(rp).stdin))).state, 'terminated');
    assert.equal(parseRunpodLegacyTable(ctl(['get', 'pod', rp.instanceId]).stdout, rp.instanceId).state, 'terminated');
  });

  it('the knob: a stop that "succeeds" (exit 0) while the pod stays RUNNING; legacy says stop failed, exit 0', () => {
    setSimPodKnobs(L.home, { stopKeepsRunning: true });
    const op = endOperation(rp, 'stop');
    const res = op.parse({ stdout: Buffer.from(sh(String(op.stdin))), stderr: Buffer.alloc(0), code: 0, truncated: false });
    assert.equal(res.code, 0);
    assert.equal(res.status?.state, 'running');
    assert.ok(!actionVerified('stop', res.status!));
    const legacy = ctl(['stop', 'pod', rp.instanceId]);
    assert.equal(legacy.status, 0);
    assert.match(legacy.stdout, /stop failed; status is RUNNING/);
    assert.equal(readSimPod(L.home)!.calls.length, 2);
    assert.equal(simContainerDead(L.home), false);
  });

  it('another key is recorded as such; no key is refused like runpodctl refuses it', () => {
    const other = ctl(['pod', 'stop', rp.instanceId], { ...L.provider!.env, RUNPOD_API_KEY: 'rpa_USERS_OWN' });
    assert.equal(other.status, 0);
    assert.equal(readSimPod(L.home)!.calls[0].key, 'other');
    const none = ctl(['pod', 'get', rp.instanceId], { RUNPOD_POD_ID: rp.instanceId });
    assert.equal(none.status, 1);
    assert.match(none.stderr, /^\{"error":/);
  });

  it('a sim home without a provider has neither the stand-in nor the variables', () => {
    const plain = buildSimHome(L.home, { gpuCount: 2 });
    assert.equal(plain.provider, null);
    assert.equal(plain.env.RUNPOD_POD_ID, undefined);
    assert.equal(readSimPod(L.home), null);
  });

  it('a Vast instance: show instance --raw (VAST_API_KEY from CONTAINER_API_KEY), destroy -y, then gone; no -y aborts', async () => {
    const V = buildSimHome(path.join(dir, 'vast'), { gpuCount: 2, provider: 'vast' });
    setSimPodKnobs(V.home, { dieAfterS: 0.1 });
    const vast: ProviderInfo & { instanceId: string } = {
      name: 'vast',
      instanceId: V.provider!.instanceId,
      evidence: [],
      actions: ['stop'],
    };
    assert.equal(V.env.VAST_CONTAINERLABEL, `C.${V.provider!.instanceId}`);
    const run = (stdin: string) =>
      execFileSync('sh', ['-s'], { input: stdin, env: { PATH: V.env.PATH, HOME: V.home, ...V.provider!.env } }).toString();
    const st = parseStatusOutput('vast', vast.instanceId, run(String(statusOperation(vast).stdin)));
    assert.deepEqual([st.state, st.pricePerHour], ['running', 6.82]);
    assert.match(st.endsAt ?? '', /^\d{4}-/);
    // the price and contract end as the real CLI prints them (providers.md 2.2): dph_total, end_date as a float
    const raw = spawnSync(path.join(V.home, 'bin', 'vastai'), ['show', 'instance', vast.instanceId, '--raw'], {
      env: { PATH: V.env.PATH, HOME: V.home, VAST_API_KEY: V.provider!.apiKey },
      encoding: 'utf8',
    }).stdout;
    assert.match(raw, /^ "dph_total": 6\.82,$/m);
    assert.match(raw, /^ "end_date": \d{10}\.0,$/m);
    assert.equal(st.endsAt, new Date(readSimVast(V.home)!.end_date * 1000).toISOString());
    const aborted = spawnSync(path.join(V.home, 'bin', 'vastai'), ['destroy', 'instance', vast.instanceId], {
      env: { PATH: V.env.PATH, HOME: V.home, VAST_API_KEY: V.provider!.apiKey },
      input: '',
      encoding: 'utf8',
    });
    assert.equal(aborted.status, 0);
    assert.match(aborted.stdout, /\[y\/N\] Aborted\.\n$/);
    assert.equal(readSimVast(V.home)!.cur_state, 'running');
    const op = endOperation(vast, 'terminate');
    const res = op.parse({ stdout: Buffer.from(run(String(op.stdin))), stderr: Buffer.alloc(0), code: 0, truncated: false });
    assert.equal(res.said, `destroying instance ${vast.instanceId}.`);
    assert.equal(res.status?.state, 'terminated');
    assert.deepEqual(
      readSimVast(V.home)!.calls.map((c) => [c.verb, c.key]),
      [['delete', 'instance']],
    );
    await waitFor('the container to end', () => simContainerDead(V.home), 10_000);
  });

  it("verification from this machine: the user's own key and a local runpodctl read the status; no key, no reading", () => {
    const op = localStatusOperation(rp);
    const parse = (out: string) => op.parse({ stdout: Buffer.from(out), stderr: Buffer.alloc(0), code: 0, truncated: false });
    assert.equal(parse(sh(String(op.stdin), { RUNPOD_API_KEY: 'rpa_USERS_OWN' }))?.state, 'running');
    assert.equal(parse(sh(String(op.stdin), {})), null);
    assert.equal(parse(sh(String(op.stdin), { RUNPOD_API_KEY: 'k', PATH: '/usr/bin:/bin' })), null);
    ctl(['pod', 'delete', rp.instanceId]);
    assert.equal(parse(sh(String(op.stdin), { RUNPOD_API_KEY: 'rpa_USERS_OWN' }))?.state, 'terminated');
  });
});
