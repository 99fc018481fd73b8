/** Launch profiles (core/launch/profile): validation, rendering of the launch script, capture from running servers, and the JSON schema. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import {
  FLAG_SPECS,
  GROUP_FIELDS,
  PROFILE_FIELDS,
  SPECULATIVE_FIELDS,
  captureProfile,
  normalizeArgv,
  parseProfileText,
  planInstances,
  profileFromServers,
  profileToJson,
  renderLaunchScript,
  validateProfile,
} from '../../../src/core/launch/profile';
import { launchProfileJsonSchema } from '../../../src/core/launch/profileJsonSchema';
import { profileFileSchema } from '../../../src/core/launch/profileSchema';
import type { SglangServer } from '../../../src/core/sglang/serverArgv';
import { server, srv } from '../../helpers/sglangServer';
import { valid } from '../../helpers/profile';
import { buildSimHome } from '../../../src/sim/home';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');

function errorsOf(x: unknown): string[] {
  const r = validateProfile(x);
  assert.equal(r.profile, undefined);
  return r.errors;
}

/** A fake interpreter (its path has a space) that records argv (NUL-separated), CUDA_VISIBLE_DEVICES and $GS_MARK per pid. */
function fakePython(dir: string): string {
  const bin = path.join(dir, 'fake bin');
  mkdirSync(bin, { recursive: true });
  const py = path.join(bin, 'python3');
  writeFileSync(
    py,
    `#!/bin/sh
out="$GS_TEST_OUT"
printf '%s\\0' "$@" > "$out/$$.argv"
printf '%s\\n%s\\n%s\\n' "$CUDA_VISIBLE_DEVICES" "\${GS_MARK:-}" "$(pwd)" > "$out/$$.env"
echo "The server is fired up and ready to roll!"
`,
  );
  chmodSync(py, 0o755);
  return py;
}

function waitFiles(dir: string, suffix: string, n: number): string[] {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const f = readdirSync(dir).filter((x) => x.endsWith(suffix));
    if (f.length >= n || Date.now() > deadline) return f;
    spawnSync('sleep', ['0.05']);
  }
}

describe('launch profiles: validation', () => {
  it('names the field in every error', () => {
    const errs = errorsOf({
      modelPath: '/m',
      speculative: { algorithm: 'MTP', numSteps: 0 },
      layout: 'pergpu',
      basePort: '30000',
      gpus: [0, 0, -1],
      extraArgs: ['--port', '1', 7],
      env: { 'A-B': 'x', CUDA_VISIBLE_DEVICES: '0', N: 3 },
      memFractionStatic: 1.5,
      chunkedPrefillSize: 0,
      basport: 2,
      workDir: 'relative/dir',
    });
    const want = [
      'speculative.algorithm: "MTP" is not one of EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH (MTP models run through NEXTN or EAGLE)',
      'basport: unknown field (did you mean "basePort"?)',
      'layout: "pergpu" is not one of per-gpu, single (did you mean "per-gpu"?)',
      'basePort: must be an integer from 1 to 65535 (got "30000")',
      'memFractionStatic: must be a number greater than 0 and at most 1, e.g. 0.88 (got 1.5)',
      'chunkedPrefillSize: must not be 0 (use -1 to disable chunked prefill)',
      'gpus[1]: GPU 0 is listed twice',
      'extraArgs[2]: must be a string (got 7)',
      'env.CUDA_VISIBLE_DEVICES: is set per instance from gpus and layout; use "gpus" instead',
      'env.N: must be a string (got 3); write numbers in quotes',
    ];
    for (const w of want) assert.ok(errs.includes(w), `missing ${JSON.stringify(w)} in\n${errs.join('\n')}`);
    for (const f of [
      'speculative.numSteps:',
      'gpus[2]:',
      'extraArgs[0]: --port is set by basePort',
      'env.A-B:',
      'workDir: "relative/dir" must be an absolute path',
    ]) {
      assert.ok(
        errs.some((e) => e.startsWith(f)),
        `no error starting with ${f}:\n${errs.join('\n')}`,
      );
    }
  });

  it('requires modelPath and an object, and checks nested and layout rules', () => {
    assert.deepEqual(errorsOf({}), ['modelPath: is required']);
    assert.match(errorsOf([1])[0], /^\(profile\): must be a JSON object/);
    assert.ok(
      errorsOf({ modelPath: '/m', speculative: { numSteps: 3 } }).includes(
        'speculative.algorithm: is required (one of EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH)',
      ),
    );
    assert.ok(
      errorsOf({ modelPath: '/m', speculative: { algorithm: 'eagle' } }).some(
        (e) => e.startsWith('speculative.algorithm: "eagle" is not one of') && e.includes('did you mean "EAGLE"'),
      ),
    );
    assert.ok(
      errorsOf({ modelPath: '/m', speculative: { algorithm: 'NEXTN', steps: 3 } }).some((e) =>
        e.startsWith('speculative.steps: unknown field'),
      ),
    );
    assert.ok(errorsOf({ modelPath: '/m', tp: 2 }).some((e) => e.startsWith('tp: is 2, but layout "per-gpu"')));
    assert.ok(
      errorsOf({ modelPath: '/m', layout: 'single', gpus: [0, 1, 2], tp: 2 }).some((e) => e.startsWith('tp: 2 does not divide the 3 GPUs')),
    );
    assert.ok(
      errorsOf({ modelPath: '/m', layout: 'single', gpus: [0, 1], tp: 2, dp: 2 }).some((e) => e.startsWith('tp: tp 2 × dp 2 = 4 GPUs')),
    );
    assert.ok(
      errorsOf({ modelPath: '/m', contextLength: 32768, extraArgs: ['--context-length', '8192'] }).includes(
        'extraArgs[0]: --context-length is already set by contextLength; give it only once',
      ),
    );
    assert.ok(errorsOf({ modelPath: '/m\nx' }).includes('modelPath: must not contain a line break'));
    assert.ok(errorsOf({ modelPath: '/m', gpus: 'some' }).some((e) => e.startsWith('gpus: must be "all" or a list')));
    assert.ok(errorsOf({ modelPath: '/m', basePort: 65534, gpus: [0, 1, 2] }).some((e) => e.startsWith('basePort: 65534 + 3 instances')));
  });

  it('fills in defaults and keeps what is given', () => {
    const p = valid({ modelPath: '~/m' });
    assert.equal(p.layout, 'per-gpu');
    assert.equal(p.basePort, 30000);
    assert.equal(p.gpus, 'all');
    assert.deepEqual(p.extraArgs, []);
    assert.deepEqual(p.env, {});
    const q = valid({
      modelPath: 'Qwen/Qwen3-8B',
      layout: 'single',
      gpus: [0, 1, 2, 3],
      tp: 2,
      chunkedPrefillSize: -1,
      speculative: { algorithm: 'EAGLE3', draftModelPath: '~/draft' },
    });
    assert.equal(q.tp, 2);
    assert.equal(q.chunkedPrefillSize, -1);
    assert.deepEqual(q.speculative, { algorithm: 'EAGLE3', draftModelPath: '~/draft' });
  });

  it('reports JSON syntax errors with line and column', () => {
    const r = parseProfileText('{\n  "modelPath": "/m",\n  "basePort": 30000,,\n}');
    assert.equal(r.profile, undefined);
    assert.match(r.errors[0], /^\(json\): .* at line 3, column \d+$/);
    assert.deepEqual(parseProfileText('\uFEFF{"modelPath": "/m"}').errors, []);
  });
});

describe('launch profiles: rendering', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-launch-unit-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('quotes every hostile value: the shell passes them through unchanged and runs none of them', () => {
    const py = fakePython(dir);
    const out = path.join(dir, 'out');
    mkdirSync(out);
    mkdirSync(path.join(dir, 'venv', 'bin'), { recursive: true });
    writeFileSync(path.join(dir, 'venv', 'bin', 'activate'), 'GS_MARK="venv sourced"; export GS_MARK\n');
    const hostile = `$(touch ${path.join(dir, 'pwned')})`;
    const p = valid({
      name: 'hostile',
      modelPath: `~/models/My Model ${hostile}`,
      servedModelName: `it's "quoted" \`id\``,
      gpus: [2, 5],
      basePort: 31000,
      host: '127.0.0.1',
      memFractionStatic: 0.88,
      reasoningParser: '$HOME',
      trustRemoteCode: true,
      speculative: { algorithm: 'NEXTN', numSteps: 3, draftModelPath: `/d/x; touch ${path.join(dir, 'pwned2')}` },
      extraArgs: ['--chat-template', `a b|c&d>${path.join(dir, 'pwned3')}`, '--x=$(id)'],
      env: { GS_TEST_OUT: out, WEIRD: `$(touch ${path.join(dir, 'pwned4')}) 'q'` },
      python: py,
      venv: '~/venv',
      workDir: '~',
      logDir: 'my logs',
    });
    const r = renderLaunchScript(p, [2, 5]);
    assert.equal(r.instances.length, 2);
    assert.deepEqual(
      r.instances.map((i) => [i.gpus, i.port, i.logFile]),
      [
        [[2], 31000, 'my logs/sglang_gpu2.log'],
        [[5], 31001, 'my logs/sglang_gpu5.log'],
      ],
    );
    const run = spawnSync('/bin/sh', ['-s'], {
      input: r.script,
      env: { PATH: process.env.PATH, HOME: dir },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const started = [...run.stdout.matchAll(/^GS-STARTED (\d+) (\d+)$/gm)].map((m) => [Number(m[1]), Number(m[2])]);
    assert.deepEqual(
      started.map((s) => s[0]),
      [31000, 31001],
    );
    const files = waitFiles(out, '.env', 2);
    assert.equal(files.length, 2);
    for (const [k, [port, pid]] of started.entries()) {
      // the printed pid is the server's own (setsid + nohup exec into it)
      const argv = readFileSync(path.join(out, `${pid}.argv`), 'utf8')
        .split('\0')
        .slice(0, -1);
      const expected = r.instances[k].argv.slice(1).map((a) => (a.startsWith('~/') ? path.join(dir, a.slice(2)) : a));
      assert.deepEqual(argv, expected);
      assert.equal(argv[argv.indexOf('--port') + 1], String(port));
      assert.ok(argv.includes(`${dir}/models/My Model ${hostile}`));
      const [cvd, mark, cwd] = readFileSync(path.join(out, `${pid}.env`), 'utf8').split('\n');
      assert.equal(cvd, String(p.gpus === 'all' ? '' : p.gpus[k]));
      assert.equal(mark, 'venv sourced');
      assert.equal(cwd, dir);
      // each instance's output went to its own log
      const log = readFileSync(path.join(dir, 'my logs', `sglang_gpu${p.gpus === 'all' ? '' : p.gpus[k]}.log`), 'utf8');
      assert.match(log, /fired up and ready to roll/);
    }
    for (const f of ['pwned', 'pwned2', 'pwned3', 'pwned4'])
      assert.equal(existsSync(path.join(dir, f)), false, `${f} was created: a value was executed`);
    // deterministic: rendering again gives the same text (diffs against last.sh show only real changes)
    assert.equal(renderLaunchScript(p, [2, 5]).script, r.script);
  });

  it('fails early with GS-ERROR when the venv or workDir is missing', () => {
    const p = valid({ modelPath: '/m', gpus: [0], venv: '~/nope', python: '/bin/true' });
    const run = spawnSync('/bin/sh', ['-s'], {
      input: renderLaunchScript(p, [0]).script,
      env: { PATH: process.env.PATH, HOME: dir },
      encoding: 'utf8',
    });
    assert.equal(run.status, 3);
    assert.match(run.stderr, /GS-ERROR venv: ~\/nope\/bin\/activate does not exist/);
    assert.doesNotMatch(run.stdout, /GS-STARTED/);
  });

  it('renders the single layout with tp/dp over all the GPUs', () => {
    const p = valid({ modelPath: '/m', layout: 'single', gpus: [0, 1, 2, 3], dp: 2, basePort: 30010 });
    const r = renderLaunchScript(p, [0, 1, 2, 3]);
    assert.equal(r.instances.length, 1);
    assert.deepEqual(r.instances[0].gpus, [0, 1, 2, 3]);
    assert.equal(r.instances[0].logFile, '~/logs/sglang_port30010.log');
    assert.deepEqual(r.instances[0].argv, [
      'python3',
      '-m',
      'sglang.launch_server',
      '--model-path',
      '/m',
      '--port',
      '30010',
      '--tp-size',
      '2',
      '--dp-size',
      '2',
    ]);
    assert.match(r.script, /start_server 0,1,2,3 30010 "\$HOME"\/logs\/sglang_port30010\.log/);
    const all = renderLaunchScript(valid({ modelPath: '/m', layout: 'single' }), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.deepEqual(all.instances[0].argv.slice(-2), ['--tp-size', '8']);
    assert.throws(
      () => renderLaunchScript(valid({ modelPath: '/m', layout: 'single', tp: 3 }), [0, 1, 2, 3]),
      /tp: 3 does not divide the 4 GPUs/,
    );
  });
});

describe('launch profiles: capture', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-launch-seeds-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** Runs the seeds' script (as the sim node writes it) with a fake interpreter; returns servers as a probe reports them. */
  function seedsServers(script: 'launch_all.sh' | 'launch_tuned.sh'): { servers: SglangServer[]; home: string } {
    const home = path.join(dir, script.replace('.sh', ''));
    mkdirSync(home, { recursive: true });
    const py = fakePython(home);
    const layout = buildSimHome(home, { gpuCount: 7, basePort: 30000, python: py });
    const out = path.join(home, 'out');
    mkdirSync(out);
    const run = spawnSync('/bin/sh', [path.join(home, script)], {
      env: { PATH: process.env.PATH, HOME: home, GS_TEST_OUT: out },
      encoding: 'utf8',
      timeout: 20_000,
    });
    assert.equal(run.status, 0, run.stderr);
    const pids = [...run.stdout.matchAll(/GPU (\d+) -> port (\d+) \(pid (\d+)\)/g)].map((m) => ({
      gpu: Number(m[1]),
      port: Number(m[2]),
      pid: Number(m[3]),
    }));
    assert.equal(pids.length, 7);
    waitFiles(out, '.argv', 7);
    const servers = pids.map(({ gpu, port, pid }) => {
      const args = [
        py,
        ...readFileSync(path.join(out, `${pid}.argv`), 'utf8')
          .split('\0')
          .slice(0, -1),
      ];
      return server(pid, port, args, { cwd: home, logFile: layout.logFiles[gpu], cudaVisibleDevices: String(gpu), gpus: [gpu] });
    });
    return { servers, home };
  }

  for (const script of ['launch_all.sh', 'launch_tuned.sh'] as const) {
    it(`capture → render reproduces the argv of the seeds' ${script} (modulo port)`, () => {
      const { servers, home } = seedsServers(script);
      const res = captureProfile(servers);
      assert.deepEqual(res.warnings, []);
      assert.equal(res.captured.length, 7);
      const p = res.profile;
      assert.equal(p.layout, 'per-gpu');
      assert.deepEqual(p.gpus, [0, 1, 2, 3, 4, 5, 6]);
      assert.equal(p.basePort, 30000);
      assert.equal(p.workDir, home);
      assert.equal(p.logDir, path.join(home, 'logs'));
      assert.equal(p.speculative?.algorithm, 'NEXTN');
      if (script === 'launch_tuned.sh') {
        assert.equal(p.quantization, 'fp8');
        assert.equal(p.kvCacheDtype, 'fp8_e4m3');
        assert.equal(p.enableHierarchicalCache, true);
        assert.equal(p.maxRunningRequests, 96);
      }
      assert.deepEqual(p.extraArgs, []);
      // the profile file round-trips through validation
      const again = valid(JSON.parse(profileToJson(p)));
      const r = renderLaunchScript(again, again.gpus as number[]);
      assert.equal(r.instances.length, 7);
      r.instances.forEach((inst, i) => {
        assert.deepEqual(inst.argv, servers[i].args, `instance ${i}`);
        assert.equal(inst.port, servers[i].port);
        assert.equal(inst.logFile, servers[i].logFile);
      });
      // moved to another base port: the same argv but the port
      const moved = renderLaunchScript({ ...again, basePort: 40000 }, [0, 1, 2, 3, 4, 5, 6]);
      moved.instances.forEach((inst, i) => assert.deepEqual(normalizeArgv(inst.argv), normalizeArgv(servers[i].args)));
      assert.equal(profileFromServers(servers).basePort, 30000);
    });
  }

  it('keeps unknown flags verbatim in extraArgs, in order', () => {
    const base = ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--host', '127.0.0.1'];
    const tail = [
      '--log-level',
      'info',
      '--tool-call-parser=qwen25',
      '--disable-radix-cache',
      '--speculative-algorithm',
      'MTP',
      '--weird',
      '-1',
    ];
    const servers = [0, 1].map((i) =>
      server(100 + i, 30000 + i, [...base, '--port', String(30000 + i), ...tail], {
        cudaVisibleDevices: String(i),
        gpus: [i],
        logFile: `/root/logs/sglang_gpu${i}.log`,
      }),
    );
    const res = captureProfile(servers);
    assert.deepEqual(res.profile.extraArgs, tail);
    assert.equal(res.profile.speculative, undefined);
    assert.ok(res.warnings.some((w) => w.startsWith('--speculative-algorithm MTP: kept verbatim')));
    const r = renderLaunchScript(res.profile, [0, 1]);
    r.instances.forEach((inst, i) => assert.deepEqual(inst.argv, servers[i].args));
  });

  it('groups servers: consecutive ports with the same flags; the rest is named in warnings', () => {
    const argv = (port: number, extra: string[] = []) => [
      'python3',
      '-m',
      'sglang.launch_server',
      '--model-path',
      '/m',
      '--port',
      String(port),
      ...extra,
    ];
    const servers = [
      server(1, 30000, argv(30000), { gpus: [0] }),
      server(2, 30001, argv(30001), { gpus: [1] }),
      server(3, 30002, argv(30002), { gpus: [2] }),
      server(4, 30003, argv(30003, ['--context-length', '8192']), { gpus: [3] }),
      server(5, 30010, argv(30010), { gpus: [4] }),
    ];
    const res = captureProfile(servers);
    assert.deepEqual(res.captured, [1, 2, 3, 4, 5], 'every server is captured');
    assert.deepEqual(res.profile.gpus, [0, 1, 2]);
    assert.deepEqual(
      res.groups.map((g) => [g.layout, g.basePort, g.gpus, g.contextLength ?? null]),
      [
        ['per-gpu', 30000, [0, 1, 2], null],
        ['per-gpu', 30003, [3], 8192],
        ['per-gpu', 30010, [4], null],
      ],
    );
    // one multi-GPU server → single layout
    const tp = captureProfile([
      server(9, 30000, ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--tp', '4', '--port', '30000'], {
        cudaVisibleDevices: '4,5,6,7',
        logFile: '/root/logs/sglang_port30000.log',
      }),
    ]);
    assert.equal(tp.profile.layout, 'single');
    assert.deepEqual(tp.profile.gpus, [4, 5, 6, 7]);
    assert.equal(tp.profile.tp, 4);
    const r = renderLaunchScript(tp.profile, [4, 5, 6, 7]);
    assert.deepEqual(
      normalizeArgv(r.instances[0].argv),
      normalizeArgv(tp.profile ? ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--tp-size', '4'] : []),
    );
    // venv and environment from the process go into the profile
    const withEnv = captureProfile([server(7, 30000, argv(30000), { gpus: [0] })], {
      virtualEnv: { 7: '/root/venv' },
      env: { 7: { NCCL_DEBUG: 'WARN' } },
    });
    assert.equal(withEnv.profile.venv, '/root/venv');
    assert.deepEqual(withEnv.profile.env, { NCCL_DEBUG: 'WARN' });
  });

  it('normalizes equivalent argv spellings', () => {
    const a = ['python3', '-m', 'sglang.launch_server', '--model=/m', '--tp', '2', '--port', '1', '--mem-fraction-static=0.8'];
    const b = ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--mem-fraction-static', '0.8', '--tp-size', '2', '--port=2'];
    assert.deepEqual(normalizeArgv(a), normalizeArgv(b));
  });
});

describe('launch profile JSON schema', () => {
  const schema = JSON.parse(readFileSync(path.join(ROOT, 'schemas', 'launch-profile.schema.json'), 'utf8'));

  it('is the schema profileJsonSchema.ts generates (npm run gen:schemas), so neither is edited without the other', () => {
    assert.deepEqual(schema, launchProfileJsonSchema());
  });

  it('describes every field validateProfile knows, in draft-07', () => {
    assert.equal(schema.$schema, 'http://json-schema.org/draft-07/schema#');
    assert.deepEqual(Object.keys(schema.properties), [...PROFILE_FIELDS]);
    assert.deepEqual(Object.keys(schema.definitions.group.properties), [...GROUP_FIELDS]);
    assert.deepEqual(Object.keys(schema.properties.speculative.properties), [...SPECULATIVE_FIELDS]);
    const walk = (s: Record<string, unknown>, where: string) => {
      for (const [k, v] of Object.entries((s.properties ?? {}) as Record<string, Record<string, unknown>>)) {
        assert.ok(typeof v.description === 'string' && v.description.length > 10, `${where}${k} has no description`);
        walk(v, `${where}${k}.`);
      }
    };
    walk(schema, '');
    walk(schema.definitions.group, 'groups[].');
    assert.deepEqual(schema.properties.speculative.properties.algorithm.enum, [
      'EAGLE',
      'EAGLE3',
      'NEXTN',
      'STANDALONE',
      'NGRAM',
      'DFLASH',
    ]);
    // every typed flag has its field in the schema
    for (const f of FLAG_SPECS) {
      const [a, b] = f.field.split('.');
      assert.ok(b ? schema.properties[a].properties[b] : schema.properties[a], f.field);
    }
  });

  it('agrees with validateProfile on its example and on invalid profiles', function () {
    for (const ex of schema.examples) {
      valid(ex);
      assert.deepEqual(profileFileSchema.safeParse(ex).error?.issues, undefined);
    }
    let Ajv: (new (o: object) => { compile(s: object): ((d: unknown) => boolean) & { errors?: unknown[] } }) | undefined;
    try {
      // ajv is only a transitive dev dependency: use it when it is there.

      Ajv = require('ajv');
      if (Ajv && (Ajv as unknown as { default?: unknown }).default) Ajv = (Ajv as unknown as { default: typeof Ajv }).default;
    } catch {
      this.skip();
    }
    // strictSchema: every keyword is one draft-07 knows (or VS Code's enumDescriptions), so the editor applies them all.
    const strict = { strictSchema: true, strictRequired: false, strictTypes: false, keywords: ['enumDescriptions'] };
    const check = new Ajv!({ ...strict, allErrors: true }).compile(schema);
    for (const ex of schema.examples) assert.equal(check(ex), true, JSON.stringify(check.errors));
    for (const bad of [
      {},
      { modelPath: '/m', speculative: { algorithm: 'MTP' } },
      { modelPath: '/m', layout: 'x' },
      { modelPath: '/m', env: { CUDA_VISIBLE_DEVICES: '0' } },
      { modelPath: '/m', nope: 1 },
      { modelPath: '/m', gpus: [] },
      { modelPath: '/m', chunkedPrefillSize: 0 },
      { modelPath: '/m', gpus: [1, 1] },
      { modelPath: '/m', groups: [{ modelPath: '/x' }] },
      { modelPath: '/m', apiKey: { env: 'A', secret: 'b' } },
      { modelPath: '/m', workDir: 'relative' },
    ]) {
      assert.equal(check(bad), false, JSON.stringify(bad));
      assert.ok(validateProfile(bad).errors.length > 0, JSON.stringify(bad));
      assert.equal(profileFileSchema.safeParse(bad).success, false, JSON.stringify(bad));
    }
  });
});

describe('SGLang flag fidelity', () => {
  it('profiles: DP attention, pp and nnodes count GPUs as SGLang does; capture keeps them', () => {
    const v = validateProfile({ modelPath: '/m', layout: 'single', gpus: [0, 1, 2, 3], tp: 4, dp: 4, enableDpAttention: true });
    assert.deepEqual(v.errors, []);
    assert.deepEqual(
      planInstances(v.profile!, [0, 1, 2, 3]).map((p) => [p.tp, p.dp]),
      [[4, 4]],
    );
    const bad = validateProfile({ modelPath: '/m', layout: 'single', gpus: [0, 1, 2, 3], tp: 4, dp: 4 });
    assert.match(bad.errors.join('\n'), /tp 4 × dp 4 = 16 GPUs, but gpus lists 4/);
    const argv = ['--model-path', '/m', '--tp', '4', '--dp', '4', '--enable-dp-attention', '--pp-size', '1', '--port', '30000'];
    const s = { ...srv(argv), gpus: [0, 1, 2, 3], cudaVisibleDevices: '0,1,2,3', logFile: '/h/logs/x.log' };
    const cap = captureProfile([s]);
    assert.equal(cap.profile.layout, 'single');
    assert.deepEqual(cap.profile.gpus, [0, 1, 2, 3]);
    assert.equal(cap.profile.enableDpAttention, true);
    const r = renderLaunchScript(cap.profile, [0, 1, 2, 3]);
    assert.deepEqual(r.instances[0].argv, s.args, 'the same argv, in the same order and spelling');
    assert.equal(r.instances[0].logFile, '/h/logs/x.log');
  });
});
