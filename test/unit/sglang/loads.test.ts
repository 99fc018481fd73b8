/** Throughput without stat lines: /v1/loads and /server_info (core/sglang/loads.ts), and the state it gives. */
import assert from 'node:assert/strict';
import { lacksDecodeLines, parseLoads, serverInfoLoads } from '../../../src/core/sglang/loads';
import { ServerStateMachine } from '../../../src/core/sglang/serverState';
import { serverFromArgv } from '../../../src/core/sglang/serverArgv';

describe('loads: /v1/loads and /server_info', () => {
  it('sums /v1/loads over DP ranks (object or array form); junk is null', () => {
    const l = parseLoads(
      JSON.stringify({
        loads: [
          { dp_rank: 0, num_running_reqs: 30, num_waiting_reqs: 4, gen_throughput: 1500.5, token_usage: 0.4 },
          { dp_rank: 1, num_running_reqs: 20, num_waiting_reqs: 0, gen_throughput: 1000, token_usage: 0.6 },
        ],
      }),
    )!;
    assert.equal(l.genThroughput, 2500.5);
    assert.equal(l.runningReqs, 50);
    assert.equal(l.queueReqs, 4);
    assert.equal(l.maxTokenUsage, 0.6);
    assert.equal(l.source, '/v1/loads');
    assert.equal(parseLoads('[{"num_reqs": 3, "gen_throughput": 10}]')!.runningReqs, 3);
    for (const bad of ['', 'nope', '{}', '[]', '{"loads": [1, 2]}', '{"detail":"Not Found"}']) assert.equal(parseLoads(bad), null, bad);
  });

  it('/server_info internal_states[].last_gen_throughput, summed over DP ranks', () => {
    const s = serverInfoLoads({
      internal_states: [{ last_gen_throughput: 700 }, { last_gen_throughput: 800, avg_spec_accept_length: 2.5 }],
    })!;
    assert.equal(s.genThroughput, 1500);
    assert.equal(s.specAcceptLength, 2.5);
    assert.equal(serverInfoLoads({}), null);
  });

  it('a --log-level warning server and a PD prefill node lack decode lines', () => {
    const srv = (extra: string[]) =>
      serverFromArgv({ pid: 1, ppid: null, argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', ...extra], exact: true })!;
    assert.equal(lacksDecodeLines(srv(['--log-level', 'warning'])), true);
    assert.equal(lacksDecodeLines(srv(['--disaggregation-mode', 'prefill'])), true);
    assert.equal(lacksDecodeLines(srv([])), false);
  });

  it('a busy server without stat lines or metrics is serving on /v1/loads figures (was "ready, no requests yet")', () => {
    const m = new ServerStateMachine(30000);
    const metrics = parseLoads('{"loads":[{"dp_rank":0,"num_running_reqs":32,"num_waiting_reqs":3,"gen_throughput":1500}]}');
    m.observe({ alive: true, pid: 1, health: { health: 'healthy', detail: 'HTTP 200' }, metrics }, 1000);
    const v = m.verdict(1000);
    assert.equal(v.state, 'serving');
    assert.match(v.reason, /^1500 tok\/s · 32 running · 3 queued/);
  });
});

describe("health: the server's own SGLANG_HEALTH_CHECK_TIMEOUT", () => {
  it('is read from its environment (default 20 s); generation off is seen', () => {
    const base = { pid: 1, ppid: null, argv: ['python3', '-m', 'sglang.launch_server', '--model-path', '/m'], exact: true };
    assert.equal(serverFromArgv(base)!.healthTimeoutS, 20);
    const s = serverFromArgv({ ...base, healthCheckTimeout: '90', healthGeneration: 'false' })!;
    assert.equal(s.healthTimeoutS, 90);
    assert.equal(s.healthGeneration, false);
    assert.equal(serverFromArgv({ ...base, healthCheckTimeout: 'x' })!.healthTimeoutS, 20);
  });

  it('a /health in flight for 30 s is not unhealthy for a server whose limit is 90 s', () => {
    const m = new ServerStateMachine(30000);
    m.feedLine('[2026-03-01 10:00:00] The server is fired up and ready to roll!', 0);
    m.observe(
      { alive: true, pid: 1, health: { health: 'healthy', detail: 'HTTP 200' }, healthInFlightSince: 1000, healthLimitMs: 90_000 },
      31_000,
    );
    assert.notEqual(m.verdict(31_000).state, 'unhealthy');
    m.observe({ alive: true, pid: 1, health: { health: 'healthy', detail: 'HTTP 200' }, healthInFlightSince: 1000 }, 31_000);
    assert.equal(m.verdict(31_000).state, 'unhealthy', 'the default 20 s');
  });
});
