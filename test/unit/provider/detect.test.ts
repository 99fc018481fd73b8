/** Provider detection: the section's parser on hostile text, and the script run by a real sh (keys never printed). */
import { strict as assert } from 'node:assert';
import { execFileSync } from 'node:child_process';
import { parseProviderSection, providerScript, shutdownCaveat } from '../../../src/core/provider/detect';
import { newNonce, sectionPrologue, splitSections } from '../../../src/core/remote/sections';

describe('provider detection', () => {
  it('RunPod from /etc/rp_environment with runpodctl and the pod key: stop and terminate', () => {
    const p = parseProviderSection(
      'rp\n/etc/rp_environment\tRUNPOD_POD_ID\tk3x9q2mzr7bt1a\n/etc/rp_environment\tRUNPOD_API_KEY\tset\nbin\trunpodctl\t/usr/bin/runpodctl\n',
    );
    assert.equal(p.name, 'runpod');
    assert.equal(p.instanceId, 'k3x9q2mzr7bt1a');
    assert.deepEqual(p.actions, ['stop', 'terminate']);
    assert.ok(p.evidence.includes('RUNPOD_POD_ID in /etc/rp_environment'));
  });
  it('RunPod with a network volume: terminate only; without runpodctl: no action', () => {
    const base = 'env\tRUNPOD_POD_ID\tabc\nenv\tRUNPOD_API_KEY\tset\n';
    assert.deepEqual(parseProviderSection(base + 'env\tRUNPOD_VOLUME_ID\tv1\nbin\trunpodctl\t/x\n').actions, ['terminate']);
    assert.deepEqual(parseProviderSection(base).actions, []);
  });
  it('Vast from CONTAINER_ID / VAST_CONTAINERLABEL; a hostile id is not used', () => {
    const v = parseProviderSection('/proc/1/environ\tVAST_CONTAINERLABEL\tC.31415926\nenv\tCONTAINER_API_KEY\tset\nbin\tvastai\t/v\n');
    assert.equal(v.name, 'vast');
    assert.equal(v.instanceId, '31415926');
    assert.deepEqual(v.actions, ['stop', 'terminate']);
    const bad = parseProviderSection('env\tCONTAINER_ID\t1; rm -rf ~\nenv\tCONTAINER_API_KEY\tset\nbin\tvastai\t/v\n');
    assert.equal(bad.instanceId, null);
    assert.deepEqual(bad.actions, []);
  });
  it('AWS, GCP, Azure from DMI; shutdown only with sudo -n; else unknown', () => {
    const aws = parseProviderSection('dmi\tsys_vendor\tAmazon EC2\ndmi\tboard_asset_tag\ti-0123456789abcdef0\nsudo\tok\t1\n');
    assert.deepEqual([aws.name, aws.instanceId, aws.actions], ['aws', 'i-0123456789abcdef0', ['shutdown']]);
    assert.equal(parseProviderSection('dmi\tproduct_name\tGoogle Compute Engine\n').name, 'gcp');
    assert.equal(parseProviderSection('dmi\tchassis_asset_tag\t7783-7084-3265-9085-8269-3286-77\n').name, 'azure');
    assert.deepEqual(parseProviderSection(''), { name: 'unknown', instanceId: null, evidence: [], actions: [] });
    assert.match(shutdownCaveat('azure'), /billing/);
  });
  it('the script run by sh reports the pod from the environment and prints "set" for the key, never its value', () => {
    const nonce = newNonce();
    const out = execFileSync('sh', ['-s'], {
      input: `${sectionPrologue(nonce)}\n${providerScript()}\nsec end\n`,
      env: { PATH: process.env.PATH, RUNPOD_POD_ID: 'podx1', RUNPOD_API_KEY: 'rpa_SECRETVALUE' },
    }).toString();
    assert.ok(!out.includes('SECRETVALUE'));
    const p = parseProviderSection(splitSections(out, nonce).get('provider') ?? '');
    assert.equal(p.name, 'runpod');
    assert.equal(p.instanceId, 'podx1');
    assert.ok(p.evidence.includes('RUNPOD_API_KEY (set) in the session environment'));
  });
});
