/**
 * Golden fixtures: every input file under test/fixtures/<parser>/ is parsed and compared with the
 * expected JSON next to it (`<input>.expected.json`). To regenerate the expected files on purpose after a
 * deliberate parser change: `npx tsc -p . && GOLDEN_UPDATE=1 npx mocha out/test/unit/golden/golden.test.js`,
 * then review the diff before committing it.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { parseBannerGpus, parseSmiBanner } from '../../../src/core/node/nvidiaSmi';
import { parseStatLine, toJsonRecord } from '../../../src/core/sglang/logLines';

const FIXTURES = path.join(__dirname, '..', '..', '..', '..', 'test', 'fixtures');

interface GoldenParser {
  dir: string;
  /** Which files in dir are inputs. */
  input: RegExp;
  parse(text: string): unknown;
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
];

describe('golden fixtures (input → expected JSON)', () => {
  for (const p of PARSERS) {
    const dir = path.join(FIXTURES, p.dir);
    const inputs = readdirSync(dir).filter((f) => p.input.test(f));
    it(`${p.dir}: has fixtures`, () => assert.ok(inputs.length > 0, `no inputs in ${dir}`));
    for (const f of inputs) {
      it(`${p.dir}/${f}`, () => {
        const got = JSON.parse(JSON.stringify(p.parse(readFileSync(path.join(dir, f), 'utf8'))));
        const expectedFile = path.join(dir, `${f}.expected.json`);
        if (process.env.GOLDEN_UPDATE === '1') writeFileSync(expectedFile, JSON.stringify(got, null, 2) + '\n');
        assert.ok(existsSync(expectedFile), `${expectedFile} is missing: run with GOLDEN_UPDATE=1 to create it`);
        assert.deepEqual(got, JSON.parse(readFileSync(expectedFile, 'utf8')));
      });
    }
  }
});
