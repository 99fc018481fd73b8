/**
 * Failure signatures on the real and source-derived lines of test/fixtures/log/failures-2026.txt (each with its
 * public source there), plus the torch-warning and exit-code rules.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { classifyLine, LogSummarizer } from '../../../src/core/sglang/logLines';
import { describeExitCode, failureOf, isTorchNotice } from '../../../src/core/sglang/failureSignatures';

interface Case {
  source: string;
  expect: string;
  line: string;
}

function cases(): Case[] {
  const text = readFileSync(path.join(__dirname, '../../../../test/fixtures/log/failures-2026.txt'), 'utf8');
  const out: Case[] = [];
  let source = '';
  let expect = '';
  for (const l of text.split('\n')) {
    if (l.startsWith('# source: ')) source = l.slice(10);
    else if (l.startsWith('# expect: ')) expect = l.slice(10);
    else if (l.length > 0 && !l.startsWith('#')) {
      out.push({ source, expect, line: l });
      expect = '';
    }
  }
  return out;
}

describe('failure signatures of 2026 SGLang lines (fixtures/log/failures-2026.txt)', () => {
  const all = cases();
  it('the fixture has its cases, each with a source and an expectation', () => {
    assert.ok(all.length >= 30, `${all.length} cases`);
    for (const c of all) assert.ok(c.source && c.expect, c.line);
  });
  for (const c of all) {
    it(`${c.expect}: ${c.line.slice(0, 80)}`, () => {
      const [cls, ...flags] = c.expect.split(' ');
      const got = classifyLine(c.line);
      if (cls === 'none') {
        assert.notEqual(got.kind, 'error', `${c.source}: not a failure`);
        return;
      }
      assert.equal(got.kind, 'error', c.source);
      if (cls === 'error') {
        assert.equal(got.errorClass, null, c.source);
        return;
      }
      assert.equal(got.errorClass, cls, c.source);
      const d = got.failure!;
      for (const f of flags) {
        if (f === 'fatal') assert.equal(d.fatal, true, 'fatal');
        else if (f === 'nonfatal') assert.equal(d.fatal, false, 'not fatal');
        else if (f === 'soft') {
          assert.equal(d.soft, true);
          assert.equal(d.fatal, false, 'a soft watchdog leaves the process');
        } else if (f.startsWith('exit=')) assert.equal(d.exitCode, Number(f.slice(5)));
      }
    });
  }

  it('the summary counts PD transfer failures as errors of their own class', () => {
    const s = new LogSummarizer();
    for (const c of all) s.add(c.line);
    const sum = s.summary();
    assert.equal(sum.errorClasses['pd-transfer'], 2);
    assert.equal(sum.errorClasses.hang, 5);
  });
});

describe('torch notices and exit codes', () => {
  it('torch [W…]/[I…] lines are notices, its [E…] lines are not', () => {
    assert.equal(isTorchNotice('[W823 09:11:05.020988021 ProcessGroupNCCL.cpp:1624] Warning: x'), true);
    assert.equal(isTorchNotice('[rank0]:[I1023 09:11:05.0 ProcessGroupNCCL.cpp:1624] NCCL_DEBUG'), true);
    assert.equal(isTorchNotice('[rank2]:[E909 08:45:31.916910323 ProcessGroupNCCL.cpp:1589] dump'), false);
    assert.equal(failureOf('[rank2]:[W909 08:45:31.916910323 ProcessGroupNCCL.cpp:1589] NCCL WARN x'), null);
    assert.equal(classifyLine('[rank4]:[W823 09:11:05.020988021 ProcessGroupNCCL.cpp:1624] Warning: WARNING: oops').kind, 'other');
  });

  it('exit codes in words', () => {
    assert.equal(describeExitCode(-9), 'exit code -9 (SIGKILL, often the out-of-memory killer)');
    assert.equal(describeExitCode(-6), 'exit code -6 (SIGABRT, an abort (C++ exception or assertion))');
    assert.equal(describeExitCode(137), 'exit code 137 (SIGKILL, often the out-of-memory killer)');
    assert.equal(describeExitCode(1), 'exit code 1');
  });
});
