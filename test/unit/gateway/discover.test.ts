/** The probe's gateways section → Gateway: ports told apart by what answers, profile, policy, health from metrics. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { gatewayJson, gatewayProbeScript, parseGatewayRecord, parseGatewaySection } from '../../../src/core/gateway/discover';

const fx = (n: string) => readFileSync(path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures', 'gateway', n), 'utf8');

function record(profile: string, extra: Record<string, unknown> = {}): string {
  const legacy = profile === 'legacy-0.1';
  const http = [
    { port: 29000, path: '/readiness', status: 404, body: '' },
    { port: 29000, path: '/metrics', status: 200, body: fx(`${profile}.metrics.txt`) },
    { port: 30000, path: '/readiness', status: 200, body: fx(`${profile}.readiness.json`) },
    legacy
      ? { port: 30000, path: '/workers', status: 404, body: '' }
      : { port: 30000, path: '/workers', status: 200, body: fx(`${profile}.workers.json`) },
    ...(legacy ? [{ port: 30000, path: '/list_workers', status: 200, body: fx('legacy-0.1.list_workers.json') }] : []),
    { port: 30000, path: '/get_loads', status: 200, body: fx(`${profile}.get_loads.json`) },
  ];
  return JSON.stringify({
    pid: 4242,
    ppid: 1,
    uid: 1000,
    found: 'title',
    title: 'sglang::router',
    args: [],
    cwd: '/home/u',
    log: '/home/u/gateway.log',
    listen: [29000, 30000],
    http,
    ...extra,
  });
}

describe('gateway discovery records', () => {
  for (const p of ['legacy-0.1', 'rest-by-url-0.2', 'rest-by-uuid-0.3', 'smg-1.x'])
    it(`${p}: API port from /readiness, metrics port from /metrics, workers and their health`, () => {
      const g = parseGatewayRecord(record(p))!;
      assert.equal(g.port, 30000);
      assert.equal(g.metricsPort, 29000);
      assert.equal(g.profile, p);
      assert.equal(g.policy, 'cache_aware', 'from the metrics’ policy label (flags hidden)');
      assert.equal(g.ready, true);
      assert.equal(g.workers.length, 1);
      assert.equal(g.workers[0].healthy, true);
      assert.equal(g.workers[0].load, 0);
    });

  it('maps onto the node’s servers, keeps the contract’s JSON fields, drops records outside a simulated node’s folder', () => {
    const sec = [record('smg-1.x'), 'garbage', record('smg-1.x', { pid: 5, cwd: '/home/other', log: '/home/other/g.log' })].join('\n');
    const gs = parseGatewaySection(sec, { node: 'n', hostname: 'h', servers: [{ port: 21001 }] }, '/home/u');
    assert.equal(gs.length, 1);
    assert.deepEqual(Object.keys(gatewayJson(gs[0])).slice(0, 6), ['pid', 'port', 'metricsPort', 'version', 'profile', 'policy']);
    const w = gatewayJson(gs[0]).workers as Array<Record<string, unknown>>;
    assert.deepEqual(Object.keys(w[0]), ['id', 'url', 'type', 'healthy', 'status', 'load', 'node', 'serverPort']);
    assert.equal(w[0].node, 'n');
    assert.equal(w[0].serverPort, 21001);
    assert.equal(parseGatewaySection(sec, { node: 'n', hostname: 'h', servers: [] }).length, 2, 'a real node lists every gateway');
  });

  it('a hidden --api-key: the API answers 401 and the gateway says so', () => {
    const r = JSON.parse(record('smg-1.x')) as { http: Array<{ path: string; status: number; body: string }> };
    for (const h of r.http) if (h.path === '/workers' || h.path === '/get_loads') Object.assign(h, { status: 401, body: '' });
    const g = parseGatewayRecord(JSON.stringify(r))!;
    assert.equal(g.authRequired, true);
    assert.equal(g.workers.length, 0);
  });

  it('the section runs python only after a cheap grep finds a candidate, and never prints the key', () => {
    const s = gatewayProbeScript();
    assert.match(s, /grep -l -a -E/);
    assert.match(s, /if \[ -n "\$gs_gw" \] && command -v python3/);
    assert.match(s, /'\*\*\*'/);
  });
});

describe('gateway discovery: a legacy build without /readiness', () => {
  it('finds its API port by /list_workers', () => {
    const r = JSON.parse(record('legacy-0.1')) as { http: Array<{ port: number; path: string; status: number; body: string }> };
    r.http = r.http.filter((h) => !(h.port === 30000 && h.path === '/readiness'));
    const g = parseGatewayRecord(JSON.stringify(r))!;
    assert.equal(g.port, 30000);
    assert.equal(g.profile, 'legacy-0.1');
    assert.equal(g.ready, null);
  });
});

describe('gateway discovery: the grep that decides whether python3 runs', () => {
  it('matches gateway command lines and titles, not a browser with --media-router or the grep itself', () => {
    const pat = /grep -l -a -E '([^']+)'/.exec(gatewayProbeScript())![1];
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs28-grep-'));
    try {
      const cases: Array<[string, boolean]> = [
        ['sglang::router\0\0\0', true],
        ['smg::router\0', true],
        ['python3\0-m\0sglang_router.launch_router\0--port\x0030000\0', true],
        ['python3\0-m\0smg\0launch\0', true],
        ['/opt/venv/bin/smg\0launch\0--worker-urls\0', true],
        ['sgl-model-gateway\0--port\x0030000\0', true],
        ['/usr/lib/chromium/chromium\0--media-router=0\0', false],
        ['python3\0-m\0sglang.launch_server\0--port\x0030000\0', false],
        [`grep\0-l\0-a\0-E\0${pat}\0`, false],
      ];
      cases.forEach(([c], i) => writeFileSync(path.join(dir, String(i)), c));
      const r = spawnSync('grep', ['-l', '-a', '-E', pat, ...cases.map((_c, i) => path.join(dir, String(i)))], { encoding: 'utf8' });
      const hit = new Set(
        r.stdout
          .split('\n')
          .filter(Boolean)
          .map((f) => Number(path.basename(f))),
      );
      cases.forEach(([c, want], i) => assert.equal(hit.has(i), want, JSON.stringify(c)));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
