/**
 * The fleet (core/node/fleet) over a fake pool whose node answers the probe with a recorded output
 * (test/fixtures/probe): refreshes deduplicated per node, a failure keeps the last probe with its typed
 * code, removed nodes are forgotten by the pool. Real nodes over sshd: test/integration/fleet.test.ts.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { Fleet } from '../../../src/core/node/fleet';
import type { NodeSpec } from '../../../src/core/ssh/config';
import type { ConnectionPool } from '../../../src/core/ssh/pool';
import type { ExecOptions, ExecResult } from '../../../src/core/ssh/transport';
import { ExecFakeTransport, execResult } from '../../helpers/fakeTransport';

const ROOT = path.resolve(__dirname, '..', '..', '..', '..');
const RECORDED = readFileSync(path.join(ROOT, 'test', 'fixtures', 'probe', 'simnode-4gpu.txt'), 'utf8');
/** The recorded probe output, re-issued under the nonce of this run's script. */
const probeAnswer = (o: ExecOptions) =>
  execResult(RECORDED.replaceAll('GS9b815887ce52620f', /^N='?(GS[0-9a-f]+)'?$/m.exec(String(o.stdin))![1]));

const spec = (name: string): NodeSpec => ({ name, host: `${name}.example.invalid`, port: 22, identityFiles: [], source: 'cli' });

function fakePool(answer: (o: ExecOptions) => ExecResult | Promise<ExecResult>) {
  const transports = new Map<string, ExecFakeTransport>();
  const forgotten: string[] = [];
  const pool = {
    get: (n: NodeSpec) => {
      if (!transports.has(n.name)) transports.set(n.name, new ExecFakeTransport((_c, o) => answer(o), n.name));
      return transports.get(n.name)!;
    },
    forget: (n: NodeSpec) => forgotten.push(n.name),
  } as unknown as ConnectionPool;
  return { pool, transports, forgotten };
}

describe('fleet (core/node/fleet)', () => {
  it('a refresh probes once however many ask at the same time, and reports probing then ok', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const { pool, transports } = fakePool(async (o) => (await gate, probeAnswer(o)));
    const fleet = new Fleet(pool);
    fleet.setNodes([spec('a')]);
    const changes: Array<string | undefined> = [];
    fleet.onDidChange((n) => changes.push(n));
    const p1 = fleet.refresh('a');
    const p2 = fleet.refresh('a');
    assert.equal(p1, p2, 'the same promise');
    assert.equal(fleet.status('a').state, 'probing');
    release();
    const st = await p1;
    assert.equal(st.state, 'ok');
    assert.equal(st.probe?.gpus.length, 4);
    assert.equal(st.probe?.node, 'a');
    assert.equal(transports.get('a')!.calls.length, 1);
    assert.deepEqual(changes, ['a', 'a']);
    await fleet.refresh('a');
    assert.equal(transports.get('a')!.calls.length, 2, 'a later refresh probes again');
    fleet.dispose();
  });

  it('a failed refresh keeps the last probe and names the typed code; a cut-short probe is remote-incomplete', async () => {
    let mode: 'ok' | 'cut' | 'throw' = 'ok';
    const { pool } = fakePool((o) => {
      if (mode === 'throw') throw new Error('socket hang up');
      const r = probeAnswer(o);
      return mode === 'ok' ? r : execResult(r.stdout.subarray(0, 200), { code: null, signal: 'KILL' });
    });
    const fleet = new Fleet(pool);
    fleet.setNodes([spec('a')]);
    const ok = await fleet.refresh('a');
    mode = 'cut';
    const cut = await fleet.refresh('a');
    assert.equal(cut.state, 'error');
    assert.equal(cut.error?.code, 'remote-incomplete');
    assert.match(cut.error!.message, /The probe did not complete on a/);
    assert.equal(cut.probe, ok.probe, 'the last good probe stays shown');
    mode = 'throw';
    const thrown = await fleet.refresh('a');
    assert.deepEqual(thrown.error, { code: 'remote-failed', message: 'socket hang up' });
    fleet.dispose();
  });

  it('unknown nodes are a config error; nodes dropped from the list lose their status and their pooled connection', async () => {
    const { pool, forgotten } = fakePool(probeAnswer);
    const fleet = new Fleet(pool);
    fleet.setNodes([spec('a'), spec('b')]);
    assert.deepEqual((await fleet.refresh('zzz')).error?.code, 'config');
    await fleet.refreshAll();
    assert.equal(fleet.status('b').state, 'ok');
    fleet.setNodes([spec('a')]);
    assert.deepEqual(forgotten, ['b']);
    assert.equal(fleet.status('b').state, 'unknown');
    assert.equal(fleet.node('b'), undefined);
    assert.equal(fleet.status('a').state, 'ok');
    fleet.dispose();
  });
});
