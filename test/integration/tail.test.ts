/**
 * RemoteTail and StatsTracker over a REAL OpenSSH sshd with the simulated node (user gstail: its own home,
 * wiped by startSimNode, so these tests never touch another suite's node).
 */
import assert from 'node:assert/strict';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { cmdTail } from '../../src/cli/cmdTail';
import { RemoteTail, TailEvent, TailOptions } from '../../src/core/remote/tail';
import { StatsTracker } from '../../src/core/sglang/liveStats';
import type { SshTransport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode, testUser } from '../helpers/simnode';
import { sleep, waitFor } from '../helpers/wait';

const USER = testUser('gstail');

function lines(ev: TailEvent[], file?: string): string[] {
  return ev.filter((e) => e.type === 'line' && (!file || e.file === file)).map((e) => (e as { line: string }).line);
}

function markers(ev: TailEvent[]): string[] {
  return ev.filter((e) => e.type === 'marker').map((e) => `${(e as { kind: string }).kind}:${e.file ?? ''}`);
}

/**
 * The node user's live `tail` processes. A zombie is not one: a tail that ended stays in the process table until
 * its parent reaps it, and where that parent is a PID 1 that never reaps (many containers) pgrep still lists it.
 */
const LIVE_TAILS = `ps -u ${USER} -o stat=,comm= | awk '$1 !~ /^Z/ && $2 == "tail"' | wc -l`;

function remoteTails(sim: SimNode): number {
  return Number(sim.sshd.ssh(LIVE_TAILS).stdout.trim());
}

describe('RemoteTail over a real OpenSSH sshd', function () {
  this.timeout(90_000);
  let sim: SimNode;
  let pool: ConnectionPool;
  let t: SshTransport;
  const tails: RemoteTail[] = [];

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: USER, startServers: false });
    const r = sim.sshd.ssh('mkdir -p t');
    assert.equal(r.status, 0, r.stderr);
  });
  after(async () => {
    for (const x of tails) x.stop();
    pool?.dispose();
    await sim?.stop();
  });
  beforeEach(() => {
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
    t = pool.get(node) as SshTransport;
  });
  afterEach(async () => {
    for (const x of tails.splice(0)) x.stop();
    pool.dispose();
    // every remote tail of the test has ended (bounded wait)
    await waitFor('remote tail processes to end', () => remoteTails(sim) === 0, 10_000);
  });

  function open(opts: TailOptions): { tail: RemoteTail; ev: TailEvent[] } {
    const tail = new RemoteTail(t, { reconnectDelaysMs: [200, 500, 1000], ...opts });
    const ev: TailEvent[] = [];
    tail.on('event', (e) => ev.push(e));
    tails.push(tail);
    return { tail, ev };
  }

  function sh(cmd: string): void {
    const r = sim.sshd.ssh(cmd);
    assert.equal(r.status, 0, `${cmd}: ${r.stderr}`);
  }

  it('shows the last lines, then follows appends', async () => {
    sh(`printf 'old %s\\n' 1 2 3 4 5 > t/f1.log`);
    const { tail, ev } = open({ files: ['t/f1.log'], initialLines: 2 });
    await tail.start();
    assert.deepEqual(lines(ev), ['old 4', 'old 5']);
    sh(`printf 'new %s\\n' 1 2 >> t/f1.log; printf 'new 3\\n' >> t/f1.log`);
    await waitFor('appended lines', () => lines(ev).length === 5, 10_000);
    assert.deepEqual(lines(ev), ['old 4', 'old 5', 'new 1', 'new 2', 'new 3']);
    assert.equal(remoteTails(sim), 1);
  });

  it('marks a truncation and follows the new content', async () => {
    sh(`printf 'a\\nb\\nc\\n' > t/f2.log`);
    const { tail, ev } = open({ files: ['t/f2.log'] });
    await tail.start();
    sh(': > t/f2.log');
    await waitFor('truncated marker', () => markers(ev).includes('truncated:t/f2.log'), 10_000);
    sh(`echo after > t/f2.log`);
    await waitFor('line after truncation', () => lines(ev).includes('after'), 10_000);
    assert.deepEqual(lines(ev), ['a', 'b', 'c', 'after']);
  });

  it('marks a rotation (mv f f.1; echo new > f) and follows the new file', async () => {
    sh(`printf 'before\\n' > t/f3.log`);
    const { tail, ev } = open({ files: ['t/f3.log'] });
    await tail.start();
    sh('mv t/f3.log t/f3.log.1; echo new > t/f3.log');
    await waitFor("the new file's line", () => lines(ev).includes('new'), 10_000);
    assert.ok(markers(ev).includes('rotated:t/f3.log'), markers(ev).join());
    sh('echo more >> t/f3.log');
    await waitFor('a later line', () => lines(ev).includes('more'), 10_000);
    assert.deepEqual(lines(ev), ['before', 'new', 'more']);
  });

  it('demultiplexes two files (and one missing that appears) on ONE channel', async () => {
    sh(`printf 'x1\\n' > t/x.log; printf 'y1\\n' > t/y.log; rm -f t/z.log`);
    const { tail, ev } = open({ files: ['t/x.log', 't/y.log', 't/z.log'] });
    await tail.start();
    assert.equal(remoteTails(sim), 1, 'one remote tail process for all files');
    // interleaved writes, partial lines, and a line that looks like a header of an unrequested file
    sh(
      `printf 'x2\\n' >> t/x.log; printf 'y2 par' >> t/y.log; printf 'x3\\n==> t/other.log <==\\n' >> t/x.log; ` +
        `sleep 0.2; printf 'tial\\n' >> t/y.log; printf 'z1\\n' > t/z.log; printf 'y3\\n' >> t/y.log`,
    );
    await waitFor('all lines', () => lines(ev, 't/y.log').includes('y3') && lines(ev, 't/z.log').includes('z1'), 10_000);
    assert.deepEqual(lines(ev, 't/x.log'), ['x1', 'x2', 'x3', '==> t/other.log <==']);
    assert.deepEqual(lines(ev, 't/y.log'), ['y1', 'y2 partial', 'y3']);
    assert.deepEqual(lines(ev, 't/z.log'), ['z1']);
    assert.deepEqual(markers(ev), ['missing:t/z.log', 'appeared:t/z.log']);
  });

  it('reconnects after the connection drops and loses no line written meanwhile', async () => {
    sh(`printf 'r1\\n' > t/r.log; printf 's1\\n' > t/s.log`);
    const { tail, ev } = open({ files: ['t/r.log', 't/s.log'] });
    await tail.start();
    sh(`printf 'r2\\n' >> t/r.log`);
    await waitFor('r2', () => lines(ev).includes('r2'), 10_000);
    sim.sshd.dropConnections();
    await waitFor('the disconnected marker', () => markers(ev).includes('disconnected:'), 15_000);
    // written while no channel is open (the OpenSSH client opens its own connection)
    sh(`for i in 1 2 3 4 5; do echo "r-away $i" >> t/r.log; done; echo s-away >> t/s.log`);
    await waitFor('the reconnected marker', () => markers(ev).includes('reconnected:'), 15_000);
    sh(`echo r-after >> t/r.log`);
    await waitFor('caught-up lines', () => lines(ev, 't/r.log').includes('r-after') && lines(ev, 't/s.log').includes('s-away'), 15_000);
    assert.deepEqual(lines(ev, 't/r.log'), ['r1', 'r2', 'r-away 1', 'r-away 2', 'r-away 3', 'r-away 4', 'r-away 5', 'r-after']);
    assert.deepEqual(lines(ev, 't/s.log'), ['s1', 's-away']);
    assert.equal(t.connectCount, 2, 'the pooled transport reconnected once');
    assert.ok(tail.connected);
  });

  it('cmdTail: the last N lines; --follow until aborted; --stats', async () => {
    sh(`printf 'c%s\\n' 1 2 3 > t/c.log`);
    let out = '';
    let err = '';
    const io = { out: (x: string) => (out += x), err: (x: string) => (err += x), isTTY: false };
    assert.equal(await cmdTail(t, 't/c.log', { lines: 2, follow: false, stats: false }, io), 0);
    assert.equal(out, 'c2\nc3\n');
    assert.equal(await cmdTail(t, 't/nope.log', { lines: 2, follow: false, stats: false }, io), 1);
    assert.match(err, /cannot open 't\/nope\.log'/);

    out = '';
    const ac = new AbortController();
    const p = cmdTail(t, 't/c.log', { lines: 1, follow: true, stats: false }, io, ac.signal);
    await waitFor('the last line', () => out === 'c3\n', 10_000);
    sh('echo c4 >> t/c.log');
    await waitFor('the appended line', () => out === 'c3\nc4\n', 10_000);
    ac.abort();
    assert.equal(await p, 0);

    const dec = (g: number) =>
      `[2026-04-05 20:02:52] Decode batch, #running-req: 32, #token: 34901, token usage: 0.19, accept len: 2.71, cuda graph: True, gen throughput (token/s): ${g}, #queue-req: 0, `;
    sh(`printf '%s\\n' '${dec(1000)}' '${dec(1987.2)}' > t/s.log`);
    out = '';
    const ac2 = new AbortController();
    const p2 = cmdTail(t, 't/s.log', { lines: 10, follow: true, stats: true }, io, ac2.signal);
    await waitFor('a stats line', () => out.includes('\n'), 10_000);
    assert.equal(out, '1,987 tok/s · 32 run · 0 queue · accept 2.71\n');
    ac2.abort();
    assert.equal(await p2, 0);
  });

  it('stop() ends the remote tail process', async () => {
    sh(`printf 'p\\n' > t/p.log`);
    const { tail } = open({ files: ['t/p.log'] });
    await tail.start();
    assert.equal(remoteTails(sim), 1);
    const t0 = Date.now();
    tail.stop();
    await waitFor('the remote tail to end after stop()', () => remoteTails(sim) === 0, 10_000);
    assert.ok(Date.now() - t0 < 10_000);
    assert.equal(tail.running, false);
  });
});

describe('StatsTracker over the 7 simulated SGLang servers (real sshd)', function () {
  this.timeout(90_000);
  const GEN = 1500;
  let sim: SimNode;
  let pool: ConnectionPool;
  let tail: RemoteTail | undefined;

  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    sim = await startSimNode({ user: USER, startServers: true, genTokPerSec: GEN });
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
  });
  after(async () => {
    tail?.stop();
    pool?.dispose();
    await sim?.stop();
  });

  it('node throughput over the 7 logs is within ±15 % of 7 × SGLANG_SIM_GEN_TPS', async () => {
    const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes.find((n) => n.name === 'simnode')!;
    const t = pool.get(node);
    const stats = new StatsTracker();
    tail = new RemoteTail(t, { files: sim.layout.logFiles, initialLines: 50 });
    tail.on('event', (e) => {
      if (e.type === 'line') stats.feed(e.file, e.line);
    });
    await tail.start();
    await waitFor('decode lines from all 7 servers', () => stats.total().servers === 7, 30_000);
    await sleep(2500); // a few more decode rounds
    const tot = stats.total();
    const want = 7 * GEN;
    assert.equal(tot.servers, 7);
    assert.ok(Math.abs(tot.genThroughput - want) <= 0.15 * want, `total ${tot.genThroughput.toFixed(0)} tok/s vs ${want}`);
    assert.ok(tot.runningReqs > 0);
    for (const f of sim.layout.logFiles) {
      assert.match(stats.describe(f), /^[\d,]+ tok\/s · \d+ run · \d+ queue · accept \d\.\d\d$/);
      assert.equal(stats.stats(f)!.ready, true);
    }
    assert.equal(remoteTails(sim), 1, 'one remote tail for 7 logs');
  });
});
