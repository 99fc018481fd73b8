/** The gateway API parsers on golden responses of each profile (test/fixtures/gateway/: the simulated gateway's
 * answers, plus HEAD and 0.2.1 shapes written from the reference's field lists). */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import {
  parseGatewayMetrics,
  parseListWorkers,
  parseLoads,
  parseReadiness,
  parseRemoveAnswer,
  parseWorkersList,
  removeCall,
  addCall,
  parseAddAnswer,
} from '../../../src/core/gateway/api';

const fx = (n: string) => readFileSync(path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'gateway', n), 'utf8');

describe('gateway API parsers (golden responses)', () => {
  it('GET /workers tells the profile: id = URL (0.2), UUID (0.3), status / lower-case connection_mode (smg 1.x)', () => {
    const by = (f: string) => parseWorkersList(fx(f))!;
    assert.equal(by('rest-by-url-0.2.workers.json').profile, 'rest-by-url-0.2');
    assert.equal(by('rest-by-uuid-0.3.workers.json').profile, 'rest-by-uuid-0.3');
    assert.equal(by('smg-1.x.workers.json').profile, 'smg-1.x');
    assert.equal(by('head-pd.workers.json').profile, 'smg-1.x');
    assert.equal(by('v021-grpc.workers.json').profile, 'rest-by-url-0.2');
    const w = by('rest-by-uuid-0.3.workers.json').workers[0];
    assert.equal(w.url, 'http://127.0.0.1:21001');
    assert.equal(w.healthy, true);
    assert.equal(w.status, 'ready');
    assert.equal(w.load, 0);
  });

  it('HEAD: PD types, bootstrap port, draining, a queued RemoveWorker job, DP-aware URLs; 0.2.1: load -1 is unknown', () => {
    const l = parseWorkersList(fx('head-pd.workers.json'))!;
    assert.deepEqual(
      l.workers.map((w) => [w.type, w.healthy, w.status, w.load, w.bootstrapPort]),
      [
        ['prefill', true, 'ready', 3, 8998],
        ['decode', false, 'not_ready', 0, null],
        ['decode', true, 'draining', 1, null],
      ],
    );
    assert.deepEqual(l.workers[2].job, { type: 'RemoveWorker', status: 'processing', message: null });
    const old = parseWorkersList(fx('v021-grpc.workers.json'))!;
    assert.equal(old.workers[1].load, null);
    assert.equal(old.workers[1].healthy, false);
    assert.equal(old.workers[1].status, 'not_ready');
  });

  it('a removal still queued keeps the worker listed, with its job', () => {
    const w = parseWorkersList(fx('smg-1.x.workers-removing.json'))!.workers[0];
    assert.equal(w.job?.type, 'RemoveWorker');
    assert.equal(w.job?.status, 'pending');
  });

  it('legacy /list_workers, and junk is not a list', () => {
    assert.deepEqual(parseListWorkers(fx('legacy-0.1.list_workers.json')), ['http://127.0.0.1:21001']);
    assert.equal(parseListWorkers('<html>'), null);
    assert.equal(parseWorkersList('{"workers": 3}'), null);
    assert.equal(parseWorkersList('not json'), null);
  });

  it('/readiness: ready with counts; 503 with its reason; a worker /health body is not a readiness', () => {
    assert.deepEqual(parseReadiness(200, fx('smg-1.x.readiness.json')), { ready: true, healthyWorkers: 1, totalWorkers: 1, reason: null });
    for (const p of ['legacy-0.1', 'rest-by-url-0.2', 'rest-by-uuid-0.3', 'smg-1.x'])
      assert.equal(parseReadiness(503, fx(`${p}.readiness-none.json`))?.ready, false, p);
    assert.equal(parseReadiness(503, fx('smg-1.x.readiness-none.json'))?.reason, 'insufficient healthy workers');
    assert.equal(parseReadiness(200, ''), null);
    assert.equal(parseReadiness(200, 'OK'), null);
  });

  it('metrics: sgl_router_* (≤0.2.4) and smg_* (≥0.3.0) per-worker health and in-flight, the policy label', () => {
    const old = parseGatewayMetrics(fx('rest-by-url-0.2.metrics.txt'))!;
    assert.equal(old.prefix, 'sgl_router_');
    assert.equal(old.health.get('http://127.0.0.1:21001'), true);
    assert.equal(old.active.get('http://127.0.0.1:21001'), 0);
    assert.equal(old.policy, 'cache_aware');
    const neu = parseGatewayMetrics(fx('smg-1.x.metrics.txt'))!;
    assert.equal(neu.prefix, 'smg_');
    assert.equal(neu.health.get('http://127.0.0.1:21001'), true);
    assert.equal(parseGatewayMetrics('sglang:num_running_reqs 3\n'), null, 'a worker’s metrics are not a gateway’s');
  });

  it('/get_loads: load -1 (no answer) is unknown', () => {
    assert.equal(parseLoads(fx('smg-1.x.get_loads.json')).get('http://127.0.0.1:21001'), 0);
    assert.equal(parseLoads('{"workers":[{"worker":"http://a:1","load":-1}]}').get('http://a:1'), null);
  });

  it('the removal call each version expects, and its answer', () => {
    const w = { id: 'e42037ac-5b47-4dbf-a559-7fe7e4c15dda', url: 'http://127.0.0.1:21001' };
    assert.deepEqual(removeCall('legacy-0.1', w), { method: 'POST', path: '/remove_worker?url=http%3A%2F%2F127.0.0.1%3A21001' });
    assert.deepEqual(removeCall('rest-by-url-0.2', { id: w.url, url: w.url }), {
      method: 'DELETE',
      path: '/workers/http%3A%2F%2F127.0.0.1%3A21001',
    });
    assert.deepEqual(removeCall('rest-by-uuid-0.3', w), { method: 'DELETE', path: `/workers/${w.id}` });
    assert.deepEqual(removeCall('smg-1.x', w), { method: 'DELETE', path: `/workers/${w.id}` });
    assert.equal(parseRemoveAnswer('legacy-0.1', 200, fx('legacy-0.1.remove.txt')).accepted, true);
    const unknown = parseRemoveAnswer('legacy-0.1', 400, fx('legacy-0.1.remove-unknown.txt'));
    assert.equal(unknown.accepted, false);
    assert.match(unknown.message, /not found/);
    for (const p of ['rest-by-url-0.2', 'rest-by-uuid-0.3', 'smg-1.x'] as const)
      assert.equal(parseRemoveAnswer(p, 202, fx(`${p}.delete.json`)).accepted, true, p);
    const bad = parseRemoveAnswer('smg-1.x', 400, fx('smg-1.x.delete-bad.json'));
    assert.equal(bad.accepted, false);
    assert.match(bad.message, /^BAD_REQUEST: /);
  });

  it('the call that adds a worker back, each version its own, and its answer (409 already there counts as added)', () => {
    const w = { url: 'http://127.0.0.1:21001', type: 'regular' as const, bootstrapPort: null };
    assert.deepEqual(addCall('legacy-0.1', w), { method: 'POST', path: '/add_worker?url=http%3A%2F%2F127.0.0.1%3A21001' });
    for (const p of ['rest-by-url-0.2', 'rest-by-uuid-0.3', 'smg-1.x'] as const)
      assert.deepEqual(addCall(p, w), {
        method: 'POST',
        path: '/workers',
        body: '{"url":"http://127.0.0.1:21001","worker_type":"regular"}',
      });
    assert.equal(JSON.parse(addCall('smg-1.x', { ...w, type: 'prefill', bootstrapPort: 8998 }).body!).bootstrap_port, 8998);
    assert.equal(parseAddAnswer('legacy-0.1', 200, 'Successfully added worker: http://127.0.0.1:21001').accepted, true);
    assert.equal(parseAddAnswer('legacy-0.1', 400, 'Failed to add worker x: health check failed').accepted, false);
    assert.equal(parseAddAnswer('smg-1.x', 202, '{"status":"accepted","worker_id":"x"}').accepted, true);
    const there = parseAddAnswer('smg-1.x', 409, '{"error":"Worker x already exists","code":"WORKER_ALREADY_EXISTS"}');
    assert.equal(there.accepted, true);
    assert.match(there.message, /^WORKER_ALREADY_EXISTS: /);
    assert.equal(parseAddAnswer('smg-1.x', 400, '{"error":"Invalid worker spec: url is required","code":"BAD_REQUEST"}').accepted, false);
  });
});
