import assert from 'node:assert/strict';
import * as http from 'node:http';
import type { AddressInfo } from 'node:net';
import { GpuSessionsError } from '../../../src/core/util/errors';
import { checkHealth, getServerInfo, httpGet, metricsSummary, parseMetrics, reachableHost } from '../../../src/core/sglang/endpoints';
import { LocalTransport } from '../../../src/core/ssh/transport';

/** What SGLang's prometheus_client exposition looks like for a DP=2, TP=2 server with speculative decoding. */
function sglangMetrics(): string {
  const lab = (dp: number, tp: number) => `{dp_rank="${dp}",engine_type="unified",model_name="qwen3.6-27b",pp_rank="0",tp_rank="${tp}"}`;
  const gauge = (name: string, help: string, v: (dp: number, tp: number) => string) => {
    const out = [`# HELP ${name} ${help}`, `# TYPE ${name} gauge`];
    for (const dp of [0, 1]) for (const tp of [0, 1]) out.push(`${name}${lab(dp, tp)} ${v(dp, tp)}`);
    return out.join('\n');
  };
  return [
    '# HELP python_gc_objects_collected_total Objects collected during gc',
    '# TYPE python_gc_objects_collected_total counter',
    'python_gc_objects_collected_total{generation="0"} 4521.0',
    gauge('sglang:num_running_reqs', 'The number of running requests.', (dp) => (dp === 0 ? '31.0' : '29.0')),
    gauge('sglang:num_used_tokens', 'The number of used tokens.', (dp) => (dp === 0 ? '40213.0' : '38877.0')),
    gauge('sglang:token_usage', 'The token usage.', (dp) => (dp === 0 ? '0.2' : '0.4')),
    // Only TP0 of each DP rank computes throughput; TP1 reports 0.
    gauge('sglang:gen_throughput', 'The generation throughput (token/s).', (dp, tp) =>
      tp === 1 ? '0.0' : dp === 0 ? '1447.08' : '1398.52',
    ),
    gauge('sglang:num_queue_reqs', 'The number of requests in the waiting queue.', (dp) => (dp === 0 ? '2.0' : '1.0')),
    gauge('sglang:cache_hit_rate', 'The prefix cache hit rate.', () => '0.31'),
    gauge('sglang:spec_accept_length', 'The average acceptance length of speculative decoding.', (dp) => (dp === 0 ? '2.9' : '3.1')),
    '# HELP sglang:prompt_tokens_total Number of prefill tokens processed.',
    '# TYPE sglang:prompt_tokens_total counter',
    `sglang:prompt_tokens_total${lab(0, 0)} 1.234567e+06`,
    `sglang:prompt_tokens_created${lab(0, 0)} 1.7756112e+09`,
    `sglang:prompt_tokens_total${lab(1, 0)} 765433.0`,
    `sglang:prompt_tokens_created${lab(1, 0)} 1.7756112e+09`,
    '# HELP sglang:generation_tokens_total Number of generation tokens processed.',
    '# TYPE sglang:generation_tokens_total counter',
    `sglang:generation_tokens_total${lab(0, 0)} 5.0e+06`,
    `sglang:generation_tokens_total${lab(1, 0)} 4.0e+06`,
    '# HELP sglang:time_to_first_token_seconds Histogram of time to first token in seconds.',
    '# TYPE sglang:time_to_first_token_seconds histogram',
    `sglang:time_to_first_token_seconds_bucket{dp_rank="0",le="0.1",model_name="qwen3.6-27b"} 3.0`,
    `sglang:time_to_first_token_seconds_bucket{dp_rank="0",le="1.0",model_name="qwen3.6-27b"} 9.0`,
    `sglang:time_to_first_token_seconds_bucket{dp_rank="0",le="+Inf",model_name="qwen3.6-27b"} 10.0`,
    `sglang:time_to_first_token_seconds_count{dp_rank="0",model_name="qwen3.6-27b"} 10.0`,
    `sglang:time_to_first_token_seconds_sum{dp_rank="0",model_name="qwen3.6-27b"} 4.25`,
    '# HELP sglang:empty_help ',
    // No final newline: the last sample must not be lost.
    'sglang:last_sample 7',
  ].join('\n');
}

describe('http', () => {
  describe('parseMetrics / metricsSummary', () => {
    it('parses every sample with its own name and labels', () => {
      const samples = parseMetrics(sglangMetrics());
      const running = samples.filter((s) => s.name === 'sglang:num_running_reqs');
      assert.equal(running.length, 4);
      assert.deepEqual(running[0].labels, { dp_rank: '0', engine_type: 'unified', model_name: 'qwen3.6-27b', pp_rank: '0', tp_rank: '0' });
      assert.equal(running[0].value, 31);
      const buckets = samples.filter((s) => s.name === 'sglang:time_to_first_token_seconds_bucket');
      assert.deepEqual(
        buckets.map((b) => [b.labels.le, b.labels.dp_rank, b.value]),
        [
          ['0.1', '0', 3],
          ['1.0', '0', 9],
          ['+Inf', '0', 10],
        ],
      );
      assert.equal(samples.find((s) => s.name === 'sglang:time_to_first_token_seconds_sum')?.value, 4.25);
      assert.equal(samples.find((s) => s.name === 'sglang:time_to_first_token_seconds_count')?.labels.dp_rank, '0');
      assert.equal(samples.find((s) => s.name === 'sglang:prompt_tokens_total')?.value, 1234567);
      assert.equal(samples.find((s) => s.name === 'python_gc_objects_collected_total')?.labels.generation, '0');
      assert.equal(samples.find((s) => s.name === 'sglang:last_sample')?.value, 7, 'the last sample survives a missing final newline');
    });

    it('summarises over DP ranks: throughput and requests summed, usage and accept length averaged', () => {
      const sum = metricsSummary(parseMetrics(sglangMetrics()));
      assert.ok(Math.abs(sum.genThroughput! - (1447.08 + 1398.52)) < 1e-9, String(sum.genThroughput));
      assert.equal(sum.runningReqs, 60);
      assert.equal(sum.queueReqs, 3);
      assert.ok(Math.abs(sum.tokenUsage! - 0.3) < 1e-9);
      assert.ok(Math.abs(sum.specAcceptLength! - 3.0) < 1e-9);
      assert.equal(sum.promptTokensTotal, 1234567 + 765433);
      assert.equal(sum.generationTokensTotal, 9_000_000);
    });

    it('a single-rank server without speculative decoding (the simulated node)', () => {
      const text = [
        '# HELP sglang:gen_throughput The generation throughput (token/s).',
        '# TYPE sglang:gen_throughput gauge',
        'sglang:gen_throughput{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0"} 2012.5',
        'sglang:spec_accept_length{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0"} 0.0',
        'sglang:num_running_reqs{model_name="m",engine_type="unified",tp_rank="0",pp_rank="0"} 32.0',
        '',
      ].join('\n');
      const sum = metricsSummary(parseMetrics(text));
      assert.equal(sum.genThroughput, 2012.5);
      assert.equal(sum.runningReqs, 32);
      assert.equal(sum.specAcceptLength, null, '0 means no speculative decoding');
      assert.equal(sum.queueReqs, null, 'absent metric');
      assert.equal(sum.promptTokensTotal, null);
    });

    it('never throws on junk', () => {
      for (const junk of [
        '',
        '<html><body>404 Not Found</body></html>',
        '{"detail":"Not Found"}',
        'metric{unterminated="x 1',
        '\u0000\u0001\u0002 garbage ~~~',
        'a b c d e f',
        '# TYPE x gauge extra words',
      ]) {
        assert.deepEqual(parseMetrics(junk), [], JSON.stringify(junk));
      }
      assert.deepEqual(metricsSummary([]), {
        genThroughput: null,
        runningReqs: null,
        queueReqs: null,
        tokenUsage: null,
        maxTokenUsage: null,
        specAcceptLength: null,
        retractedReqs: null,
        retractedTotal: null,
        promptTokensTotal: null,
        generationTokensTotal: null,
      });
    });

    it('matches sglang_ names, sums counters over label sets, takes the fullest pool of hybrid models', () => {
      const text = [
        'sglang_gen_throughput{model_name="m",tp_rank="0",dp_rank="0"} 100',
        'sglang_gen_throughput{model_name="m",tp_rank="0",dp_rank="1"} 50',
        'sglang:generation_tokens_total{model_name="m",tp_rank="0",is_streaming="true"} 700',
        'sglang:generation_tokens_total{model_name="m",tp_rank="0",is_streaming="false"} 300',
        'sglang:generation_tokens_total{model_name="m",tp_rank="1",is_streaming="true"} 700',
        'sglang:generation_tokens_total{model_name="m",tp_rank="1",is_streaming="false"} 300',
        'sglang:full_token_usage{dp_rank="0"} 0.2',
        'sglang:swa_token_usage{dp_rank="0"} 0.9',
        'sglang:mamba_usage{dp_rank="1"} 0.4',
        'sglang:num_retracted_reqs{dp_rank="0"} 2',
        'sglangx_gen_throughput 999',
        'vllm:gen_throughput 999',
      ].join('\n');
      const sum = metricsSummary(parseMetrics(text));
      assert.equal(sum.genThroughput, 150);
      assert.equal(sum.generationTokensTotal, 1000, 'sum over is_streaming, TP ranks repeat');
      assert.ok(Math.abs(sum.tokenUsage! - 0.65) < 1e-9, String(sum.tokenUsage));
      assert.equal(sum.maxTokenUsage, 0.9);
      assert.equal(sum.retractedReqs, 2);
    });

    it('KV usage is sglang:token_usage (already the max over pools); never pending_prealloc_token_usage', () => {
      // metrics_collector.py: token_usage = round(get_max_pool_usage(), 2); pending_prealloc is a PD decode figure
      const pd = metricsSummary(
        parseMetrics(
          [
            'sglang:token_usage{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.31',
            'sglang:pending_prealloc_token_usage{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.85',
            'sglang:full_token_usage{engine_type="unified",model_name="m",moe_ep_rank="0",pp_rank="0",tp_rank="0"} 0.12',
          ].join('\n'),
        ),
      );
      assert.equal(pd.tokenUsage, 0.31);
      assert.equal(pd.maxTokenUsage, 0.31);
      const onlyPending = metricsSummary(parseMetrics('sglang:pending_prealloc_token_usage{tp_rank="0"} 0.85\n'));
      assert.equal(onlyPending.tokenUsage, null);
    });

    it('reads +Inf and NaN values', () => {
      const s = parseMetrics('a 1\nb +Inf\nc NaN\nd -Inf\n');
      assert.deepEqual(
        s.map((x) => x.value),
        [1, Infinity, NaN, -Infinity],
      );
    });
  });

  describe('httpGet / checkHealth / getServerInfo (over a transport socket)', () => {
    let server: http.Server;
    let port = 0;
    const t = new LocalTransport();
    const hanging: http.ServerResponse[] = [];
    let healthStatus = 200;

    before(async () => {
      server = http.createServer((req, res) => {
        if (req.url === '/health') {
          res.writeHead(healthStatus, { 'content-type': 'text/plain' }).end();
        } else if (req.url === '/slow') {
          hanging.push(res);
        } else if (req.url === '/big') {
          res.writeHead(200, { 'content-type': 'text/plain' }).end('x'.repeat(1_000_000));
        } else if (req.url === '/get_server_info') {
          res
            .writeHead(200, { 'content-type': 'application/json' })
            .end(JSON.stringify({ model_path: '/m', version: '0.5.11', auth: req.headers.authorization ?? null }));
        } else {
          res.writeHead(404, { 'content-type': 'application/json' }).end('{"detail":"Not Found"}');
        }
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      port = (server.address() as AddressInfo).port;
    });
    after(async () => {
      for (const r of hanging) r.destroy();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      t.dispose();
    });

    it('maps wildcard listen addresses to loopback', () => {
      assert.equal(reachableHost('0.0.0.0'), '127.0.0.1');
      assert.equal(reachableHost('::'), '::1');
      assert.equal(reachableHost('[::]'), '::1');
      assert.equal(reachableHost('[::1]'), '::1');
      assert.equal(reachableHost(''), '127.0.0.1');
      assert.equal(reachableHost('10.0.0.5'), '10.0.0.5');
    });

    it('GETs through the transport socket (0.0.0.0 → 127.0.0.1), bounding the body', async () => {
      const r = await httpGet(t, '0.0.0.0', port, '/get_server_info');
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], 'application/json');
      assert.equal(JSON.parse(r.body).version, '0.5.11');
      assert.ok(r.durationMs >= 0);
      const big = await httpGet(t, '127.0.0.1', port, '/big', { maxBytes: 1000 });
      assert.equal(big.body.length, 1000);
      assert.equal(big.truncated, true);
    });

    it('times out with GpuSessionsError("timeout")', async () => {
      await assert.rejects(
        httpGet(t, '127.0.0.1', port, '/slow', { timeoutMs: 300 }),
        (e: unknown) => e instanceof GpuSessionsError && e.code === 'timeout',
      );
    });

    it('health: 200 healthy, 503 starting, no answer busy, refused dead', async () => {
      healthStatus = 200;
      assert.equal((await checkHealth(t, '127.0.0.1', port)).health, 'healthy');
      healthStatus = 503;
      assert.equal((await checkHealth(t, '127.0.0.1', port)).health, 'starting');
      healthStatus = 200;
      // A server that accepts and never answers (newer SGLang runs a generation for /health).
      const mute = http.createServer((_req, res) => hanging.push(res));
      await new Promise<void>((resolve) => mute.listen(0, '127.0.0.1', resolve));
      const mutePort = (mute.address() as AddressInfo).port;
      try {
        const h = await checkHealth(t, '127.0.0.1', mutePort, 300);
        assert.equal(h.health, 'busy', h.detail);
      } finally {
        for (const r of hanging) r.destroy();
        mute.closeAllConnections();
        await new Promise((resolve) => mute.close(resolve));
      }
      // The same port, now closed: connection refused.
      const dead = await checkHealth(t, '127.0.0.1', mutePort, 1000);
      assert.equal(dead.health, 'dead', dead.detail);
    });

    it('server info: /server_info, then /get_server_info on 404; the API key is sent when given', async () => {
      const info = await getServerInfo(t, '127.0.0.1', port, { apiKey: 'k123' });
      assert.deepEqual(info, { model_path: '/m', version: '0.5.11', auth: 'Bearer k123' });
    });
  });
});
