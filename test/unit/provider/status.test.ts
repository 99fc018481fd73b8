/** Provider status parsers on the CLIs' real output shapes (test/fixtures/provider, from providers.md §1.2, §2.2). */
import { strict as assert } from 'node:assert';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  actionVerified,
  parseRunpodLegacyTable,
  parseRunpodPodGet,
  parseVastShowInstance,
  runpodV2Missing,
} from '../../../src/core/provider/status';

const fx = (n: string) => readFileSync(path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'provider', n), 'utf8');

describe('provider status parsers', () => {
  it('runpodctl pod get (v2 JSON): RUNNING, costPerHr', () => {
    const s = parseRunpodPodGet(fx('runpod-pod-get.json'), '', 0);
    assert.deepEqual(s, { state: 'running', word: 'RUNNING', pricePerHour: 41.93, endsAt: null });
    assert.equal(parseRunpodPodGet(fx('runpod-pod-get.json').replace('RUNNING', 'EXITED'), '', 0).state, 'stopped');
    assert.equal(parseRunpodPodGet(fx('runpod-pod-get.json').replace('RUNNING', 'TERMINATED'), '', 0).state, 'terminated');
  });
  it('runpodctl pod get of a deleted pod (404, exit 1) is gone; other errors are unknown', () => {
    assert.equal(parseRunpodPodGet('', fx('runpod-pod-get-404.stderr'), 1).state, 'terminated');
    assert.equal(parseRunpodPodGet('', '{"error":"unauthorized (status 401)"}', 1).state, 'unknown');
    assert.equal(parseRunpodPodGet('{not json', '', 0).state, 'unknown');
  });
  it('legacy table: split on tabs (the GPU cell has a space), $/HR with -a, absent pod is gone', () => {
    const s = parseRunpodLegacyTable(fx('runpod-legacy-get-pod.txt'), 'k3x9q2mzr7bt1a');
    assert.deepEqual(s, { state: 'running', word: 'RUNNING', pricePerHour: 41.93, endsAt: null });
    assert.equal(parseRunpodLegacyTable(fx('runpod-legacy-get-pod-gone.txt'), 'k3x9q2mzr7bt1a').state, 'terminated');
    assert.equal(parseRunpodLegacyTable('Error: API key not found\n', 'k3x9q2mzr7bt1a').state, 'unknown');
    assert.ok(runpodV2Missing('', 'Error: unknown command "pod" for "runpodctl"'));
  });
  it('vastai show instance --raw: running with dph_total and end_date; {"instances": null} is gone', () => {
    const s = parseVastShowInstance(fx('vast-show-instance.json'));
    assert.equal(s.state, 'running');
    assert.equal(s.pricePerHour, 23.871);
    assert.equal(s.endsAt, new Date(1796637600 * 1000).toISOString());
    assert.equal(parseVastShowInstance(fx('vast-show-instance-gone.json')).state, 'terminated');
    const stopped = fx('vast-show-instance.json').replace('"actual_status": "running"', '"actual_status": "stopped"');
    assert.equal(parseVastShowInstance(stopped).state, 'stopped');
    assert.equal(parseVastShowInstance('{"error": true, "status_code": 401, "msg": "bad key"}').state, 'unknown');
    assert.equal(
      parseVastShowInstance(fx('vast-show-instance.json').replace('"actual_status": "running"', '"actual_status": "offline"')).state,
      'unknown',
    );
  });
  it('a stop is verified by stopped or gone, a terminate only by gone; running never', () => {
    const st = (state: 'running' | 'stopped' | 'terminated' | 'unknown') => ({ state, word: null, pricePerHour: null, endsAt: null });
    assert.ok(actionVerified('stop', st('stopped')));
    assert.ok(actionVerified('stop', st('terminated')));
    assert.ok(!actionVerified('stop', st('running')));
    assert.ok(!actionVerified('terminate', st('stopped')));
    assert.ok(!actionVerified('terminate', st('unknown')));
  });
});
