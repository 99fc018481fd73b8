/**
 * Hostile inputs through every parser: random bytes, truncations and mutations of real-format samples.
 * Each parser must return (never throw, never hang) and classify sensibly. Deterministic PRNG, bounded.
 *
 * Cross-cutting on purpose (the one exception to one test file per source file): the same hostile-input
 * property is checked for every parser in one place, so a new parser is added to this list, not left out.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseMetrics, metricsSummary } from '../../src/core/sglang/endpoints';
import { checkHostKey, parseKnownHosts } from '../../src/core/ssh/knownHosts';
import { LineSplitter, LogSummarizer, classifyLine, parseStatLine } from '../../src/core/sglang/logLines';
import { parseComputeApps, parseGpuQuery, parseSmiBanner } from '../../src/core/node/nvidiaSmi';
import { findServers, parseProcRecords, parsePsLines } from '../../src/core/sglang/serverArgv';
import { parseArtifacts, parseProbeOutput } from '../../src/core/node/probe';
import { parseDoneIndices, parseProgressJson } from '../../src/core/node/jobProgress';
import { redactText } from '../../src/core/util/redact';
import { loadSshConfig } from '../../src/core/ssh/config';
import { TarReader } from '../../src/core/remote/tar';
import { planted } from '../helpers/planted';

function prng(seed: number) {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const SAMPLES = {
  decode:
    '[2025-05-31 18:31:21 DP0 TP0] Decode batch. #running-req: 8, #token: 37217, token usage: 0.13, accept len: 2.90, cuda graph: True, gen throughput (token/s): 171.01, #queue-req: 0',
  prefill:
    '[2026-04-05 20:02:51] Prefill batch, #new-seq: 1, #new-token: 158, #cached-token: 0, token usage: 0.08, #running-req: 31, #queue-req: 0, cuda graph: True, input throughput (token/s): 559.53',
  query:
    '0, NVIDIA B200, GPU-9a1c2f3e-0000-1111-2222-333344445555, 183359, 161234, 97, 61, 912.45\n1, NVIDIA B200, GPU-aa, 183359, [N/A], 0, 30, [N/A]\n',
  banner:
    '| NVIDIA-SMI 610.43.02              KMD Version: 610.43.02     CUDA UMD Version: 13.3     |\n| Processes:  |\n|    0   N/A  N/A         2345678      C   sglang::scheduler_TP0                 161234MiB |\n',
  apps: 'pid, process_name, used_gpu_memory [MiB]\n1234, python3, 161234 MiB\n',
  ps: '   4242       1 python3 -m sglang.launch_server --model-path /dev/shm/Qwen3.6-27B --port 30003 --tp 2\n   4300    4242 sglang::scheduler_TP0\n',
  progress: '{"completed": 902087, "failed": 2199, "total": 913786, "output_tokens": 1640000000, "elapsed_s": 62820, "status": "done"}',
  done: '0\n1\n2\n5\n6\n',
  sshconfig: 'Host a\n  HostName 127.0.0.1\n  Port 2222\n  User root\n  ProxyJump b\nHost b\n  HostName 10.0.0.1\nInclude nowhere/*\n',
  knownhosts:
    '[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIDbrlVWmEtRAb9V5l6jnlnEnbMPczz5IwcWjD3mhkm7O\n@revoked * ssh-rsa AAAAB3NzaC1yc2E=\n|1|F1E1KeoE/eEWhi10WpGv4OdiO6Y=|3988QV0VE8wmZL7suNrYQLITLCg= ssh-ed25519 AAAA\n',
  metrics:
    '# HELP sglang:gen_throughput x\n# TYPE sglang:gen_throughput gauge\nsglang:gen_throughput{model_name="m",dp_rank="0"} 1987.5\nsglang:num_running_reqs{model_name="m"} 32\n',
};

function mutate(rand: () => number, s: string): string {
  const ops = Math.floor(rand() * 6);
  let out = s;
  for (let i = 0; i < ops; i++) {
    const at = Math.floor(rand() * (out.length + 1));
    const r = rand();
    if (r < 0.25)
      out = out.slice(0, at); // truncate
    else if (r < 0.5) out = out.slice(0, at) + String.fromCharCode(Math.floor(rand() * 0x10000)) + out.slice(at);
    else if (r < 0.7) out = out.slice(0, at) + out.slice(at + Math.floor(rand() * 20));
    else if (r < 0.85)
      out =
        out.slice(0, at) +
        ['\n', '\0', '\r', ',', ':', '[', ']', '"', '{', '}', '|', '\t', '\x1b[31m', '%', '\\'][Math.floor(rand() * 15)] +
        out.slice(at);
    else out = out + out.slice(0, at);
  }
  return out;
}

function randomText(rand: () => number, n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += String.fromCharCode(rand() < 0.8 ? 32 + Math.floor(rand() * 95) : Math.floor(rand() * 0x3000));
  return s;
}

describe('hostile inputs through every parser', function () {
  this.timeout(60_000);
  const ROUNDS = 400;
  const rand = prng(20261129);

  const inputs = (sample: string): string[] => {
    const out: string[] = [];
    for (let i = 0; i < ROUNDS; i++) out.push(i % 5 === 0 ? randomText(rand, Math.floor(rand() * 400)) : mutate(rand, sample));
    return out;
  };

  it('log lines: classify never throws; stat lines keep numbers finite or null', () => {
    for (const line of [...inputs(SAMPLES.decode), ...inputs(SAMPLES.prefill)]) {
      const c = classifyLine(line);
      assert.ok(['decode', 'prefill', 'ready', 'error', 'traceback', 'access', 'startup', 'other'].includes(c.kind));
      const st = parseStatLine(line);
      if (st)
        for (const v of [st.genThroughput, st.runningReqs, st.queueReqs, st.tokenUsage, st.acceptLen])
          assert.ok(v === null || Number.isFinite(v), `${v} from ${JSON.stringify(line)}`);
    }
    const sum = new LogSummarizer();
    for (const l of inputs(SAMPLES.decode)) sum.add(l);
    assert.ok(sum.summary().totalLines >= ROUNDS);
  });

  it('a 100 MB runaway line is bounded by the line splitter and classified quickly', () => {
    const sp = new LineSplitter({ maxLineBytes: 1024 * 1024 });
    const chunk = Buffer.alloc(1024 * 1024, 0x41);
    const t0 = Date.now();
    let lines: string[] = [];
    for (let i = 0; i < 100; i++) lines = lines.concat(sp.push(chunk));
    lines = lines.concat(sp.push('\nnext\n'));
    assert.ok(lines.length >= 2);
    assert.ok(
      lines.every((l) => l.length <= 1024 * 1024 + 200),
      'every line bounded',
    );
    classifyLine(lines[0]);
    assert.ok(Date.now() - t0 < 10_000);
  });

  it('nvidia-smi outputs: GPUs keep integer indexes, values finite or null', () => {
    for (const t of inputs(SAMPLES.query))
      for (const g of parseGpuQuery(t)) {
        assert.ok(Number.isInteger(g.index));
        for (const v of [g.memoryTotalMiB, g.memoryUsedMiB, g.utilizationPct, g.temperatureC, g.powerW])
          assert.ok(v === null || Number.isFinite(v));
      }
    for (const t of inputs(SAMPLES.banner)) parseSmiBanner(t);
    for (const t of inputs(SAMPLES.apps)) parseComputeApps(t);
  });

  it('ps lines and /proc records: never throw; servers only from real launcher argv', () => {
    for (const t of inputs(SAMPLES.ps)) {
      const servers = findServers(parsePsLines(t), parseProcRecords(t), [{ pid: 4300, gpuIndex: 1 }]);
      for (const s of servers) {
        assert.ok(Number.isInteger(s.port));
        assert.ok(s.args.join(' ').includes('sglang'));
      }
    }
  });

  it('progress files and done indices: reported, never thrown', () => {
    for (const t of inputs(SAMPLES.progress)) {
      const p = parseProgressJson(t);
      if (!p.ok) assert.ok(p.error && p.error.length > 0);
      for (const v of [p.percent, p.etaS, p.ratePerS]) assert.ok(v === null || Number.isFinite(v));
    }
    for (const t of inputs(SAMPLES.done)) {
      const d = parseDoneIndices(t);
      assert.ok(d.count >= 0 && d.gaps >= 0);
    }
  });

  it('ssh configs: every mangled config loads with diagnostics, never throws', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-fuzz-'));
    try {
      let i = 0;
      for (const t of inputs(SAMPLES.sshconfig).slice(0, 150)) {
        const f = path.join(dir, `c${i++}`);
        writeFileSync(f, t);
        const c = loadSshConfig(f, { homeDir: dir });
        for (const n of c.nodes) assert.ok(Number.isInteger(n.port) && n.port > 0 && n.port < 65536, `port ${n.port}`);
        for (const d of c.diagnostics) assert.ok(d.message.length > 0);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('known_hosts: mangled files never throw and never make an unknown key "known"', () => {
    const blob = Buffer.from('AAAAC3NzaC1lZDI1NTE5AAAAIBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB', 'base64');
    for (const t of inputs(SAMPLES.knownhosts)) {
      const entries = parseKnownHosts(t, 'kh');
      const v = checkHostKey(entries, '127.0.0.1', 2222, blob);
      assert.notEqual(v.status, 'known');
    }
  });

  it('probe output and artifact records: never throw, bounded counts', () => {
    for (const t of inputs('\n@@N:home@@\n/root\n@@N:artifacts@@\nF\t10\t1700000000\t/root/a.log\0G\t0\t0\t/root/repo\0\n@@N:end@@\n')) {
      parseProbeOutput('n', t, 'N');
      assert.ok(parseArtifacts(t, 50).artifacts.length <= 50);
    }
  });

  it('tar streams: random bytes are refused with a clear error, not a hang', () => {
    for (let i = 0; i < 100; i++) {
      const buf = Buffer.from(randomText(rand, 512 + Math.floor(rand() * 4000)), 'latin1');
      const r = new TarReader({ entry: () => true, data: () => undefined, end: () => undefined });
      try {
        r.push(buf);
      } catch (e) {
        assert.match((e as Error).message, /tar stream corrupted/);
      }
    }
  });

  it('metrics text and redaction: never throw, redaction idempotent', () => {
    for (const t of inputs(SAMPLES.metrics)) metricsSummary(parseMetrics(t));
    for (const t of inputs(
      `export HF_TOKEN=${planted('hf_', 'ZyXwVuTsRqPoNmLkJiHgFeDcBa0123456789')} ${planted('AKIA', 'IOSFODNN7EXAMPL3')}`,
    )) {
      const once = redactText(t);
      assert.equal(redactText(once), once);
    }
  });
});
