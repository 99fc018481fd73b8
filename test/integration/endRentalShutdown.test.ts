/**
 * `end-rental --shutdown`, the generic fallback (issue 46), over a REAL OpenSSH sshd on a simulated node that plays
 * no provider. A stand-in `sudo` on the node's PATH (~/bin) records every call in a folder outside the home (so the
 * salvaged folders do not change) and lets `-n` in only when that folder holds `sudo-ok`; its `shutdown -h now`
 * stops the servers and the test then stops the node's sshd, as a halting machine's goes. Without `sudo -n`: refused
 * (exit 5, `no-provider-action`), nothing run. With it: exactly one `shutdown -h now`, the warning that some
 * providers keep billing a machine that is only shut down, verified by SSH going away; the JSON's contract keys.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { cli } from '../helpers/cli';
import { SimNode, startSimNode } from '../helpers/simnode';

const sudoStandIn = (dir: string) => `#!/bin/sh
# stand-in sudo (tests): -n works only when ${dir}/sudo-ok exists; every call is recorded
S='${dir}'
[ "$1" = "-n" ] && shift
printf '%s\\n' "$*" >> "$S/calls"
[ -e "$S/sudo-ok" ] || { echo 'sudo: a password is required' >&2; exit 1; }
case "$*" in
  true) exit 0 ;;
  'shutdown -h now')
    (sleep 1; sh "$HOME/stop_all.sh"; touch "$S/halted") </dev/null >/dev/null 2>&1 &
    exit 0 ;;
esac
echo "sudo (stand-in): $*: not allowed" >&2
exit 1
`;

describe('end-rental --shutdown over a real OpenSSH sshd (no provider; a stand-in sudo)', function () {
  this.timeout(300_000);
  let sim: SimNode;
  let work: string;
  let sudoDir: string;
  let halt: NodeJS.Timeout | undefined;
  const dest = () => path.join(work, 'salvage');
  const g = () => ['--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile];
  const sudoCalls = () => (existsSync(path.join(sudoDir, 'calls')) ? readFileSync(path.join(sudoDir, 'calls'), 'utf8').split('\n') : []);
  const shutdowns = () => sudoCalls().filter((l) => /shutdown/.test(l));
  const endRental = (...extra: string[]) =>
    cli([...g(), 'end-rental', 'simnode', '--shutdown', '--json', '--dest', dest(), ...extra], { timeoutMs: 120_000 });
  const KEYS = ['node', 'provider', 'action', 'instanceId', 'verdictAt', 'endedAt', 'verified', 'evidence'];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    work = mkdtempSync(path.join(os.tmpdir(), 'gs-endrental-shutdown-'));
    sudoDir = path.join(work, 'sudo');
    mkdirSync(sudoDir, { mode: 0o777 });
    chmodSync(sudoDir, 0o777);
    chmodSync(work, 0o755);
    sim = await startSimNode({
      user: 'gs46shut',
      gpuCount: 1,
      beforeStart: (home) => writeFileSync(path.join(home, 'bin', 'sudo'), sudoStandIn(sudoDir), { mode: 0o755 }),
    });
    execFileSync('chown', [`${sim.user}:${sim.user}`, sudoDir]);
    assert.equal(sim.sshd.ssh('command -v sudo').stdout.trim(), path.join(sim.home, 'bin', 'sudo'));
    // the node halts: its sshd goes with it
    halt = setInterval(() => {
      if (existsSync(path.join(sudoDir, 'halted'))) {
        clearInterval(halt);
        void sim.sshd.stop();
      }
    }, 300);
    const s = await cli([...g(), 'salvage', 'simnode', '--dest', dest(), '--yes', '--json', '--stop-servers'], { timeoutMs: 180_000 });
    assert.equal(s.code, 0, s.stderr + s.stdout.slice(0, 1500));
    assert.equal(JSON.parse(s.stdout).verdict, 'safe');
  });
  after(async () => {
    if (halt) clearInterval(halt);
    await sim?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  it('without sudo -n: no shutdown action in the probe; refused with no-provider-action, nothing run', async () => {
    const p = JSON.parse((await cli([...g(), 'probe', 'simnode', '--json'])).stdout).provider;
    assert.deepEqual([p.name, p.actions], ['unknown', []]);
    const r = await endRental('--yes');
    assert.equal(r.code, 5, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    for (const k of KEYS) assert.ok(k in j, `${k} in ${Object.keys(j).join()}`);
    assert.deepEqual(
      [j.node, j.provider, j.action, j.instanceId, j.endedAt, j.verified, j.outcome],
      ['simnode', 'unknown', 'shutdown', null, null, false, 'refused'],
    );
    assert.match(j.verdictAt, /^\d{4}-\d\d-\d\dT/);
    assert.deepEqual(
      j.reasons.map((x: { code: string }) => x.code),
      ['no-provider-action'],
    );
    assert.match(j.reasons[0].message, /cannot shutdown from the node \(`sudo -n` does not work on it\): end it in the provider's console/);
    assert.equal(j.command, null);
    assert.ok(sudoCalls().includes('true'), 'the probe asked sudo -n');
    assert.deepEqual(shutdowns(), []);
  });

  it('with sudo -n: --dry-run names the command and the billing warning and runs nothing', async () => {
    writeFileSync(path.join(sudoDir, 'sudo-ok'), '');
    const p = JSON.parse((await cli([...g(), 'probe', 'simnode', '--json'])).stdout).provider;
    assert.deepEqual([p.name, p.actions], ['unknown', ['shutdown']]);
    assert.ok(p.evidence.includes('sudo -n works'), p.evidence.join('; '));
    const r = await endRental('--dry-run');
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    assert.deepEqual([j.outcome, j.command, j.verified, j.endedAt], ['dry-run', 'sudo -n shutdown -h now', false, null]);
    assert.ok(
      j.evidence.some((e: string) => /keep billing/.test(e)),
      j.evidence.join('\n'),
    );
    assert.deepEqual(shutdowns(), []);
  });

  it('with sudo -n: exactly one `shutdown -h now`, the billing warning, verified by SSH going away (exit 0)', async () => {
    const r = await endRental('--yes', '--verify-timeout', '60');
    assert.equal(r.code, 0, r.stderr + r.stdout);
    const j = JSON.parse(r.stdout);
    for (const k of KEYS) assert.ok(k in j, `${k} in ${Object.keys(j).join()}`);
    assert.deepEqual(
      [j.node, j.provider, j.action, j.instanceId, j.verified, j.outcome, j.command],
      ['simnode', 'unknown', 'shutdown', null, true, 'ended', 'sudo -n shutdown -h now'],
    );
    assert.match(j.verdictAt, /^\d{4}-\d\d-\d\dT/);
    assert.match(j.endedAt, /^\d{4}-\d\d-\d\dT/);
    assert.ok(Date.parse(j.endedAt) >= Date.parse(j.verdictAt));
    assert.ok(
      j.evidence.includes('Some providers (Azure, and any that bill a stopped disk) keep billing a machine that is only shut down.'),
      j.evidence.join('\n'),
    );
    assert.ok(
      j.evidence.some((e: string) => /^SSH stopped answering/.test(e)),
      j.evidence.join('\n'),
    );
    assert.ok(
      j.evidence.includes('unknown has no status the node can read for a shutdown: SSH going away is the only evidence'),
      j.evidence.join('\n'),
    );
    assert.deepEqual(shutdowns(), ['shutdown -h now']);
  });
});
