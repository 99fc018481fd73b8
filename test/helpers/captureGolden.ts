/**
 * Captures real outputs of the core's remote operations from the simulated node (a real OpenSSH sshd, see
 * simnode.ts) as golden inputs under test/fixtures/<parser>/: `<case>.txt` is the stdout byte for byte,
 * `<case>.meta.json` the exit code, stderr and the arguments the parser needs. As root:
 *   npx tsc -p . && node out/test/helpers/captureGolden.js [probe|snapshot|launch ...]
 * then review the new inputs (node output is hostile: no secret may end up in a fixture) and write the
 * expected JSON with GOLDEN_UPDATE=1 (see test/unit/golden/golden.test.ts).
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import type { ExecOptions, ExecResult, Transport } from '../../src/core/ssh/transport';
import { RemoteOperation, runOperation } from '../../src/core/remote/operation';
import { probeOperation } from '../../src/core/node/probe';
import { snapshotOperation } from '../../src/core/salvage/snapshot/snapshot';
import {
  lastDecodeLineOperation,
  launch,
  pollOperation,
  preflightOperation,
  scanOperation,
  stopServer,
} from '../../src/core/launch/launch';
import { LaunchProfile, validateProfile } from '../../src/core/launch/profile';
import { startSimNode, testUser } from './simnode';
import { freeTestPorts } from './ports';

const FIXTURES = path.join(__dirname, '..', '..', '..', 'test', 'fixtures');

interface Recorded {
  command: string;
  r: ExecResult;
}

/** The transport, recording every exec (the operation's name is matched by command afterwards). */
function recording(t: Transport, log: Recorded[]): Transport {
  return new Proxy(t, {
    get(target, prop, recv) {
      if (prop !== 'exec') return Reflect.get(target, prop, recv) as unknown;
      return async (command: string, opts: ExecOptions) => {
        const r = await target.exec(command, opts);
        log.push({ command, r });
        return r;
      };
    },
  });
}

function save(dir: string, name: string, r: ExecResult, args: Record<string, unknown>): void {
  const d = path.join(FIXTURES, dir);
  mkdirSync(d, { recursive: true });
  writeFileSync(path.join(d, `${name}.txt`), r.stdout);
  const meta = { code: r.code, stderr: r.stderr.toString('utf8'), ...args };
  writeFileSync(path.join(d, `${name}.meta.json`), JSON.stringify(meta, null, 2) + '\n');
  console.log(`wrote ${dir}/${name}.txt (${r.stdout.length} bytes, exit ${r.code})`);
}

/** Runs one operation and keeps its raw result. */
async function captureOp<T>(t: Transport, op: RemoteOperation<T>): Promise<{ value: T; r: ExecResult }> {
  const log: Recorded[] = [];
  const value = await runOperation(recording(t, log), op);
  return { value, r: log[log.length - 1].r };
}

async function main(): Promise<void> {
  const want = new Set(process.argv.slice(2));
  const all = want.size === 0;
  const sim = await startSimNode({ user: testUser('gscapture'), gpuCount: 4, decodePeriodS: 0.5 });
  const pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  try {
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
    const t = pool.get(node);
    await new Promise((r) => setTimeout(r, 2000)); // a few decode lines in every log
    if (all || want.has('probe')) {
      const opts = { maxArtifacts: 50 };
      save('probe', 'simnode-4gpu', (await captureOp(t, probeOperation('simnode', opts))).r, { node: 'simnode', opts });
    }
    const scan = await captureOp(t, scanOperation());
    if (all || want.has('snapshot')) {
      const serverPids = scan.value.servers.map((s) => s.pid).sort((a, b) => a - b);
      save('snapshot', 'simnode-4gpu', (await captureOp(t, snapshotOperation('simnode', serverPids))).r, { node: 'simnode', serverPids });
    }
    if (all || want.has('launch')) {
      save('launch', 'scan-4-servers', scan.r, { op: 'scan' });
      const items = scan.value.servers.map((s) => ({ pid: s.pid, logFile: s.logFile! }));
      save('launch', 'poll-4-ready', (await captureOp(t, pollOperation(items))).r, { op: 'poll', count: items.length });
      const line = await captureOp(t, lastDecodeLineOperation(items[0].logFile));
      save('launch', 'decode-line', line.r, { op: 'decode-line' });

      const base = {
        name: 'golden',
        modelPath: sim.layout.modelPath,
        servedModelName: sim.layout.servedModelName,
        layout: 'per-gpu',
        host: '127.0.0.1',
        venv: '~/venv',
        logDir: '~/launch-logs',
      };
      const valid = (x: Record<string, unknown>): LaunchProfile => {
        const v = validateProfile({ ...base, ...x });
        if (!v.profile) throw new Error(v.errors.join('; '));
        return v.profile;
      };
      const busy = valid({ gpus: [0, 1], basePort: sim.layout.ports[0] });
      const pf = (p: LaunchProfile, name: string, override: boolean) =>
        captureOp(t, preflightOperation(p, p.gpus, 'simnode', { override })).then((x) =>
          save('launch', name, x.r, { op: 'preflight', profile: p, requested: p.gpus, node: 'simnode', override }),
        );
      await pf(busy, 'preflight-busy', false);
      const free = await freeTestPorts(2);
      await pf(valid({ gpus: [2], basePort: free, modelPath: '~/no-such-model', python: '/no/python3' }), 'preflight-bad', false);
      const one = valid({ gpus: [3], basePort: free });
      await pf(one, 'preflight-override', true);

      // A real launch and stop: the upload, run and kill outputs.
      const log: Recorded[] = [];
      const rt = recording(t, log);
      const res = await launch(rt, one, { override: true, timeoutMs: 60_000 });
      if (res.outcome !== 'ready') throw new Error(`launch: ${res.outcome} ${JSON.stringify(res.instances.map((i) => i.error))}`);
      const find = (re: RegExp) => log.find((x) => re.test(x.command))!.r;
      save('launch', 'upload-first', find(/mkdir -p "\$d" \|\| exit 3/), { op: 'upload', node: 'simnode', fileName: 'golden.sh' });
      save('launch', 'run-one', find(/sh "\$f" <\/dev\/null/), { op: 'run' });
      log.length = 0;
      const again = await launch(rt, valid({ gpus: [3], basePort: free + 1 }), { override: true, timeoutMs: 60_000 });
      save('launch', 'upload-previous', find(/mkdir -p "\$d" \|\| exit 3/), { op: 'upload', node: 'simnode', fileName: 'golden.sh' });
      log.length = 0;
      const stop = await stopServer(rt, { port: free, termTimeoutMs: 10_000 });
      if (!stop.stopped) throw new Error(stop.message);
      save('launch', 'kill-term', log[log.length - 1].r, { op: 'kill' });
      await stopServer(t, { port: again.instances[0].port, termTimeoutMs: 10_000 });
    }
  } finally {
    pool.dispose();
    await sim.stop();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
