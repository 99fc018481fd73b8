/**
 * Golden fixtures: every input file under test/fixtures/<parser>/ is parsed and compared with the
 * expected JSON next to it (`<input>.expected.json`). An input may have `<name>.meta.json` beside it: the
 * exit code, stderr and the arguments its parser needs (captured together with it by
 * test/helpers/captureGolden.ts, which records real outputs from the simulated node). To regenerate the
 * expected files on purpose after a deliberate parser change:
 * `npx tsc -p . && GOLDEN_UPDATE=1 npx mocha out/test/unit/golden/golden.test.js`, then review the diff
 * before committing it.
 *
 * Cross-cutting on purpose: one runner walks the fixtures of several parsers (log, probe, nvidia-smi,
 * snapshot, launch, ssh), so each parser's own unit test file holds its edge cases and this one its real outputs.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseBannerGpus, parseSmiBanner } from '../../../src/core/node/nvidiaSmi';
import { ProbeOptions, parseProbeOutput } from '../../../src/core/node/probe';
import { parseSnapshotOutput } from '../../../src/core/salvage/snapshot/snapshot';
import { parseStatLine, toJsonRecord } from '../../../src/core/sglang/logLines';
import type { LaunchProfile } from '../../../src/core/launch/profile';
import type { ExecResult } from '../../../src/core/ssh/transport';
import {
  parseKillOutput,
  parsePollOutput,
  parsePreflightOutput,
  parseRunOutput,
  parseScanOutput,
  parseUploadOutput,
} from '../../../src/core/launch/launch';

const FIXTURES = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures');

/** `<name>.meta.json` of a captured input: exit code, stderr, and what the parser is called with. */
type Meta = Record<string, any> & { code?: number | null; stderr?: string };

interface GoldenParser {
  dir: string;
  /** Which files in dir are inputs. */
  input: RegExp;
  parse(text: string, meta: Meta): unknown;
}

/** The per-run nonce of a sectioned output (the first `@@<nonce>:` marker). */
function nonceOf(text: string): string {
  const m = /@@(GS[0-9a-f]{16}):/.exec(text);
  assert.ok(m, 'no section marker in the input');
  return m[1];
}

function execResult(text: string, meta: Meta): ExecResult {
  return { stdout: Buffer.from(text, 'utf8'), stderr: Buffer.from(meta.stderr ?? '', 'utf8'), code: meta.code ?? 0, truncated: false };
}

const mapToObject = <V>(m: Map<number, V>) => Object.fromEntries([...m].map(([k, v]) => [String(k), v]));

/** The launch outputs: one parser per operation, named by meta.op. */
function parseLaunch(text: string, meta: Meta): unknown {
  const n = () => nonceOf(text);
  switch (meta.op) {
    case 'preflight':
      return parsePreflightOutput(text, n(), meta.profile as LaunchProfile, meta.requested, meta.node, Boolean(meta.override));
    case 'poll':
      return parsePollOutput(text, n(), meta.count);
    case 'scan': {
      const s = parseScanOutput(text, n());
      return { ...s, procs: mapToObject(s.procs) };
    }
    case 'upload':
      return parseUploadOutput(execResult(text, meta), meta.node, meta.fileName);
    case 'run': {
      const r = parseRunOutput(execResult(text, meta));
      return { ...r, started: mapToObject(r.started) };
    }
    case 'kill':
      return parseKillOutput(execResult(text, meta));
    case 'decode-line':
      return { line: text.trim(), stat: parseStatLine(text.trim()) };
    default:
      throw new Error(`unknown op ${String(meta.op)}`);
  }
}

const PARSERS: GoldenParser[] = [
  {
    dir: 'log',
    input: /\.log$/,
    parse: (text) =>
      text
        .split('\n')
        .map((l) => parseStatLine(l))
        .filter((s) => s !== null)
        .map((s) => toJsonRecord(s)),
  },
  {
    dir: 'nvidia-smi',
    input: /^banner-.*\.txt$/,
    parse: (text) => ({ banner: parseSmiBanner(text), gpus: parseBannerGpus(text) }),
  },
  {
    dir: 'probe',
    input: /\.txt$/,
    parse: (text, meta) => {
      // probedAt is the parse time: not part of what the output says.
      const { probedAt: _probedAt, ...r } = parseProbeOutput(meta.node, text, nonceOf(text), meta.opts as ProbeOptions, 0);
      return r;
    },
  },
  {
    dir: 'snapshot',
    input: /\.txt$/,
    parse: (text, meta) => {
      // takenAt is the parse time: not part of what the output says.
      const { takenAt: _takenAt, ...r } = parseSnapshotOutput(meta.node, text, nonceOf(text), meta.serverPids);
      return r;
    },
  },
  { dir: 'launch', input: /\.txt$/, parse: parseLaunch },
];

describe('golden fixtures (input → expected JSON)', () => {
  for (const p of PARSERS) {
    const dir = path.join(FIXTURES, p.dir);
    const inputs = readdirSync(dir).filter((f) => p.input.test(f));
    it(`${p.dir}: has fixtures`, () => assert.ok(inputs.length > 0, `no inputs in ${dir}`));
    for (const f of inputs) {
      it(`${p.dir}/${f}`, () => {
        const metaFile = path.join(dir, f.replace(/\.txt$/, '.meta.json'));
        const meta = (metaFile.endsWith('.meta.json') && existsSync(metaFile) ? JSON.parse(readFileSync(metaFile, 'utf8')) : {}) as Meta;
        const got = JSON.parse(JSON.stringify(p.parse(readFileSync(path.join(dir, f), 'utf8'), meta)));
        const expectedFile = path.join(dir, `${f}.expected.json`);
        if (process.env.GOLDEN_UPDATE === '1') writeFileSync(expectedFile, JSON.stringify(got, null, 2) + '\n');
        assert.ok(existsSync(expectedFile), `${expectedFile} is missing: run with GOLDEN_UPDATE=1 to create it`);
        assert.deepEqual(got, JSON.parse(readFileSync(expectedFile, 'utf8')));
      });
    }
  }
});
