/** The CLI's human-readable probe output (cli/format): a real probe result, and node strings that try to forge lines. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { formatProbe, gib } from '../../../src/cli/format';
import type { ProbeResult } from '../../../src/core/node/probe';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const golden = (): ProbeResult =>
  JSON.parse(readFileSync(path.join(ROOT, 'test', 'fixtures', 'probe', 'simnode-4gpu.txt.expected.json'), 'utf8'));

describe('CLI format (cli/format)', () => {
  it('gib: MiB to one decimal GiB; unknown is ?', () => {
    assert.equal(gib(183359), '179.1 GiB');
    assert.equal(gib(0), '0.0 GiB');
    assert.equal(gib(null), '?');
  });

  it('formats the simulated 4-GPU node: one line per fact, GPUs and servers listed, artifact kinds counted', () => {
    const p = golden();
    const out = formatProbe(p);
    const lines = out.split('\n');
    assert.equal(lines.pop(), '', 'ends with a newline');
    assert.equal(lines[0], 'simnode (vm) — Debian GNU/Linux 12 (bookworm), Linux 6.18.44-fc-v1045 x86_64');
    assert.equal(lines[1], '  CPU: AMD EPYC × 2 cores · RAM 23.5 GiB');
    assert.equal(lines[2], '  GPUs: 4 · driver 570.133.20 · CUDA 12.8');
    assert.equal(lines[3], '    [0] NVIDIA B200  168708 / 183359 MiB  util 85%  62°C  630.43 W');
    assert.equal(lines[7], '  SGLang servers: 4');
    assert.match(
      lines[8],
      /^ {4}:32937 {2}pid 9098 {2}\/home\/gscapturecore\/models\/Qwen3\.6-27B {2}spec NEXTN {2}gpu 0 {2}log \/home\/gscapturecore\/logs\/sglang_gpu0\.log$/,
    );
    const art = lines.findIndex((l) => l.startsWith('  Artifacts: '));
    assert.equal(lines[art], `  Artifacts: ${p.artifacts.length}`);
    const kinds = lines.slice(art + 1, -1).map((l) => /^ {4}(\S+): (\d+)$/.exec(l));
    assert.ok(kinds.every(Boolean), lines.slice(art + 1).join('\n'));
    assert.equal(
      kinds.reduce((n, m) => n + Number(m![2]), 0),
      p.artifacts.length,
    );
    assert.equal(lines[lines.length - 1], '  (probed in 0 ms, one round trip)');
  });

  it('parallelism, no GPUs, unknown values and a truncated artifact list', () => {
    const p = golden();
    p.gpuState = 'no-driver' as ProbeResult['gpuState'];
    p.gpuMessage = 'NVIDIA-SMI has failed';
    p.cpuCores = null;
    p.memTotalKiB = null;
    p.hostname = null;
    p.artifactsTruncated = true;
    p.servers = [
      {
        ...p.servers[0],
        tp: 4,
        dp: 2,
        enableDpAttention: true,
        pp: 2,
        ep: 8,
        nnodes: 2,
        statLines: false,
        logLevel: 'warning',
        speculativeAlgorithm: null,
        gpus: [],
        logFile: null,
      },
    ];
    const out = formatProbe(p);
    assert.match(out, /^simnode \(\?\) — /);
    assert.match(out, /\n {2}CPU: AMD EPYC × \? cores · RAM \?\n {2}GPUs: none — NVIDIA-SMI has failed\n/);
    assert.match(
      out,
      /\n {4}:32937 {2}pid 9098 {2}\S+ {2}TP4 DP2\(attn\) PP2 EP8 rank 0 of 2 nodes no stat lines \(--log-level warning\)\n/,
    );
    assert.match(out, /Artifacts: 18 \(truncated; raise the limit to see all\)/);
  });

  it('node strings cannot add a line or a terminal escape: newlines and controls are made visible', () => {
    const p = golden();
    p.hostname = 'vm\n  GPUs: 0 · forged';
    p.os = 'Linux\u001b]0;pwned\u0007';
    p.gpus[0] = { ...p.gpus[0], name: 'B200\r\n    [9] fake GPU' };
    p.servers[0] = { ...p.servers[0], modelPath: '/m\nSGLang servers: 99', logFile: '/l\u202e.log', speculativeAlgorithm: 'X\nY' };
    p.gpuMessage = 'm\nforged';
    const out = formatProbe(p);
    const n = formatProbe(golden()).split('\n').length;
    assert.equal(out.split('\n').length, n, 'the same number of lines as the clean probe');
    assert.ok(!/[\u0000-\u0008\u000b-\u001f\u007f\u202e]/.test(out), JSON.stringify(out));
    assert.match(out, /vm\\u000a {2}GPUs: 0 · forged/);
  });
});
