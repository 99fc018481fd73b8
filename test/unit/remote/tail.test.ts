import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, renameSync, rmSync, stat, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { PassThrough } from 'node:stream';
import type { Duplex } from 'node:stream';
import { RemoteTail, ResumeSkipper, RingBuffer, TailEvent, buildTailCommand, parseTailNotice } from '../../../src/core/remote/tail';
import { ConnectionState, ExecResult, ExecStream, LocalTransport, Transport } from '../../../src/core/ssh/transport';
import { sleep, waitFor } from '../../helpers/wait';
const tick = () => new Promise((r) => setImmediate(r));

// ---------------------------------------------------------------------------------------------------------
// A transport whose streams the test writes by hand (GNU tail's output format, byte by byte if need be).

class FakeStream implements ExecStream {
  readonly stdout = new PassThrough();
  readonly stderr = new PassThrough();
  closed = false;
  private resolveDone!: (r: { code: number | null; signal?: string }) => void;
  readonly done = new Promise<{ code: number | null; signal?: string }>((r) => (this.resolveDone = r));
  constructor(readonly command: string) {}
  close(): void {
    this.end({ code: null });
    this.closed = true;
  }
  /** The remote side ends (code null = the connection dropped). */
  end(r: { code: number | null; signal?: string }): void {
    if (this.closed) return;
    this.closed = true;
    this.stdout.end();
    this.stderr.end();
    setImmediate(() => this.resolveDone(r));
  }
  out(s: string | Buffer): void {
    this.stdout.write(typeof s === 'string' ? Buffer.from(s) : s);
  }
  err(s: string): void {
    this.stderr.write(Buffer.from(s));
  }
}

class FakeTransport implements Transport {
  readonly label = 'fake';
  readonly state: ConnectionState = 'connected';
  streams: FakeStream[] = [];
  failNext = 0;
  private waiters: Array<(s: FakeStream) => void> = [];
  async exec(): Promise<ExecResult> {
    throw new Error('not used');
  }
  async stream(command: string): Promise<ExecStream> {
    if (this.failNext > 0) {
      this.failNext--;
      throw Object.assign(new Error('unreachable'), { code: 'unreachable' });
    }
    const s = new FakeStream(command);
    this.streams.push(s);
    const w = this.waiters.shift();
    if (w) w(s);
    return s;
  }
  /** The n-th stream (0-based), waiting for it to be opened. */
  async nth(n: number, timeoutMs = 5000): Promise<FakeStream> {
    const deadline = Date.now() + timeoutMs;
    while (this.streams.length <= n) {
      if (Date.now() > deadline) throw new Error(`stream ${n} was not opened`);
      await sleep(5);
    }
    return this.streams[n];
  }
  async connectTcp(): Promise<Duplex> {
    throw new Error('not used');
  }
  describe() {
    return {};
  }
  onStateChange() {
    return () => undefined;
  }
  dispose(): void {}
}

const SENT = '/home/u/.cache/gpu-sessions/tail-sentinel';

function prologue(stats: string[], mode = 'n', count = 200): string {
  return `@@gs-tail 1 ${mode} ${count} ${stats.join(' ')}|${SENT}\n`;
}

function collect(tail: RemoteTail): TailEvent[] {
  const ev: TailEvent[] = [];
  tail.on('event', (e) => ev.push(e));
  return ev;
}

const lines = (ev: TailEvent[], file?: string) =>
  ev.filter((e) => e.type === 'line' && (!file || e.file === file)).map((e) => (e as { line: string }).line);
const markers = (ev: TailEvent[]) => ev.filter((e) => e.type === 'marker').map((e) => `${(e as { kind: string }).kind}:${e.file ?? ''}`);

/** Start a tail on the fake and complete its prologue + initial output. */
async function started(files: string[], initial: string, opts: { stats?: string[]; initialLines?: number } = {}) {
  const t = new FakeTransport();
  const tail = new RemoteTail(t, { files, reconnectDelaysMs: [10], initialLines: opts.initialLines });
  const ev = collect(tail);
  const p = tail.start();
  const s = await t.nth(0);
  s.out(prologue(opts.stats ?? files.map((_, i) => `${100 + i}:${1000 + i}`)) + initial);
  await p;
  return { t, tail, ev, s };
}

// ---------------------------------------------------------------------------------------------------------

describe('tail: RingBuffer', () => {
  it('keeps the newest `capacity` items in order and counts the dropped ones', () => {
    const r = new RingBuffer<number>(3);
    assert.deepEqual(r.toArray(), []);
    for (let i = 1; i <= 5; i++) r.push(i);
    assert.deepEqual(r.toArray(), [3, 4, 5]);
    assert.equal(r.length, 3);
    assert.equal(r.dropped, 2);
    r.clear();
    assert.equal(r.length, 0);
    assert.equal(r.dropped, 0);
    r.push(9);
    assert.deepEqual(r.toArray(), [9]);
  });

  it('stays bounded with a large capacity (grows lazily, wraps correctly)', () => {
    const r = new RingBuffer<number>(5000);
    for (let i = 0; i < 12_345; i++) r.push(i);
    const a = r.toArray();
    assert.equal(a.length, 5000);
    assert.equal(a[0], 12_345 - 5000);
    assert.equal(a[4999], 12_344);
    for (let i = 1; i < a.length; i++) assert.equal(a[i], a[i - 1] + 1);
    assert.equal(r.dropped, 12_345 - 5000);
  });

  it('rejects a capacity below 1', () => {
    assert.throws(() => new RingBuffer(0), RangeError);
    assert.throws(() => new RingBuffer(1.5), RangeError);
  });
});

describe('tail: remote command and notices', () => {
  it('quotes every path and execs one GNU tail for all files plus the sentinel', () => {
    const cmd = buildTailCommand(['logs/a.log', "it's here.log", '$(touch /tmp/pwned)', '-n'], { lines: 50 });
    assert.match(cmd, /exec tail -n 50 -F -- logs\/a\.log 'it'\\''s here\.log' '\$\(touch \/tmp\/pwned\)' -n "\$s"\n$/);
    assert.match(cmd, /^LC_ALL=C; export LC_ALL/);
    assert.match(cmd, /g '\$\(touch \/tmp\/pwned\)' - 0/);
    const r = buildTailCommand(['a'], { resume: [{ ino: '123', from: 77 }], slack: 65536, cap: 1000000 });
    assert.match(r, /g a 123 77/);
    assert.match(r, /exec tail -c "\$m" -F -- a "\$s"/);
    // an inode that is not a number never reaches the shell
    assert.match(buildTailCommand(['a'], { resume: [{ ino: '1;rm -rf /', from: 0 }], slack: 1, cap: 2 }), /g a - 0/);
  });

  it('the command runs under sh: the prologue reports sizes and inodes, injection attempts stay literal', async function () {
    if (!/GNU coreutils/.test(spawnSync('tail', ['--version'], { encoding: 'utf8' }).stdout ?? '')) this.skip();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'gs-tailcmd-'));
    try {
      const evil = path.join(dir, '$(touch pwned) `touch pwned2`; a.log');
      writeFileSync(evil, 'x1\nx2\n');
      const t = new LocalTransport({ ...process.env, XDG_CACHE_HOME: path.join(dir, 'cache') }, dir);
      const cmd = buildTailCommand([evil, path.join(dir, 'missing')], { lines: 1 }).replace('-F --', '--');
      const r = await t.exec(cmd, { timeoutMs: 10_000 });
      const out = r.stdout.toString();
      assert.match(out, /^@@gs-tail 1 n 1 6:\d+ -:-\|.*tail-sentinel\n==> .*a\.log <==\nx2\n\n==> .*tail-sentinel <==\n$/);
      assert.ok(!existsSync(path.join(dir, 'pwned')) && !existsSync(path.join(dir, 'pwned2')));
      assert.match(r.stderr.toString(), /cannot open .*missing.* No such file or directory/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('parses GNU tail notices', () => {
    assert.deepEqual(parseTailNotice("tail: cannot open 'a b' for reading: No such file or directory"), { kind: 'missing', name: "'a b'" });
    assert.deepEqual(parseTailNotice('tail: x.log: file truncated'), { kind: 'truncated', name: 'x.log' });
    assert.deepEqual(parseTailNotice("tail: 'x.log' has been replaced;  following new file"), { kind: 'replaced', name: "'x.log'" });
    assert.deepEqual(parseTailNotice("tail: 'x.log' has appeared;  following new file"), { kind: 'appeared', name: "'x.log'" });
    assert.deepEqual(parseTailNotice("tail: 'x.log' has become inaccessible: No such file or directory"), {
      kind: 'gone',
      name: "'x.log'",
    });
    assert.deepEqual(parseTailNotice("tail: cannot open 'x' for reading: Permission denied"), { kind: 'error', name: "'x'" });
    assert.equal(parseTailNotice('something else'), null);
  });
});

describe('tail: header demultiplexing', () => {
  const A = '/logs/a.log';
  const B = '/logs/b.log';
  const INITIAL = `==> ${A} <==\na1\na2\n\n==> ${B} <==\nb1\n\n==> ${SENT} <==\n`;

  it('splits the initial backlog by header and resolves start() at the sentinel', async () => {
    const { tail, ev } = await started([A, B], INITIAL);
    assert.deepEqual(lines(ev, A), ['a1', 'a2']);
    assert.deepEqual(lines(ev, B), ['b1']);
    assert.equal(tail.linesSeen, 3);
    assert.ok(tail.connected);
    tail.stop();
  });

  it('a line that looks like a header but names no requested file is content; so is a repeated header of the current file', async () => {
    const { tail, ev, s } = await started([A, B], INITIAL);
    s.out(`\n==> ${A} <==\na3\n==> /logs/other.log <==\n==> ${A} <==\na4\n\n==> ${B} <==\nb2\n`);
    await sleep(60);
    assert.deepEqual(lines(ev, A), ['a1', 'a2', 'a3', '==> /logs/other.log <==', `==> ${A} <==`, 'a4']);
    assert.deepEqual(lines(ev, B), ['b1', 'b2']);
    tail.stop();
  });

  it('a partial line cut by a switch of file continues when its file comes back', async () => {
    const { tail, ev, s } = await started([A, B], INITIAL);
    // GNU tail: "a3" written without newline, then B's header (with its leading "\n"), then the rest of a3
    s.out(`\n==> ${A} <==\na3-par`);
    await tick();
    s.out(`\n==> ${B} <==\nb2\n\n==> ${A} <==\ntial\n`);
    await sleep(60);
    assert.deepEqual(lines(ev, A), ['a1', 'a2', 'a3-partial']);
    assert.deepEqual(lines(ev, B), ['b1', 'b2']);
    tail.stop();
  });

  it('gives the same result whatever the chunking (split at every byte)', async () => {
    // (GNU tail: A prints a partial "a2 part", B prints b2, A prints the rest "ial" and two header-LIKE lines)
    const stream =
      `==> ${A} <==\na1\n\n==> ${B} <==\nb1\n\n==> ${SENT} <==\n` +
      `\n==> ${A} <==\na2 part\n==> ${B} <==\nb2\n` +
      `\n==> ${A} <==\nial\n==> ${A} <==\n==> /logs/c.log <==\nlast\n` +
      `\n==> ${B} <==\nb3\n`;
    const expectA = ['a1', 'a2 partial', `==> ${A} <==`, '==> /logs/c.log <==', 'last'];
    const expectB = ['b1', 'b2', 'b3'];
    for (const size of [1, 2, 3, 5, 7, 11, 4096]) {
      const t = new FakeTransport();
      const tail = new RemoteTail(t, { files: [A, B] });
      const ev = collect(tail);
      const p = tail.start();
      const s = await t.nth(0);
      const all = Buffer.from(prologue(['1:1', '2:2']) + stream);
      for (let i = 0; i < all.length; i += size) {
        s.out(all.subarray(i, i + size));
        if (i % (size * 16) === 0) await tick();
      }
      await p;
      await sleep(60);
      assert.deepEqual(lines(ev, A), expectA, `chunk size ${size}`);
      assert.deepEqual(lines(ev, B), expectB, `chunk size ${size}`);
      tail.stop();
    }
  });

  it('during the backlog, a header may only name a later file (an earlier one is content)', async () => {
    const { tail, ev } = await started([A, B], `==> ${B} <==\nb1\n==> ${A} <==\nb2\n\n==> ${SENT} <==\n`);
    assert.deepEqual(lines(ev, B), ['b1', `==> ${A} <==`, 'b2']);
    assert.deepEqual(lines(ev, A), []);
    tail.stop();
  });

  it('a single file: output after the backlog is never split by header-like lines', async () => {
    const { tail, ev, s } = await started([A], `==> ${A} <==\nx\n\n==> ${SENT} <==\n`);
    s.out(`\n==> ${A} <==\ny\n==> ${A} <==\nz\n`);
    await sleep(60);
    assert.deepEqual(lines(ev, A), ['x', 'y', `==> ${A} <==`, 'z']);
    tail.stop();
  });

  it('the last line of a chunk is emitted after a short hold, without waiting for more output', async () => {
    const { tail, ev, s } = await started([A, B], INITIAL);
    s.out(`\n==> ${A} <==\nlive\n`);
    await sleep(80);
    assert.deepEqual(lines(ev, A), ['a1', 'a2', 'live']);
    tail.stop();
  });

  it("tail's first output comes long after the prologue (slow exec): the first file's backlog is still its own", async () => {
    const t = new FakeTransport();
    const tail = new RemoteTail(t, { files: [A, B] });
    const ev = collect(tail);
    const p = tail.start();
    const s = await t.nth(0);
    s.out(prologue(['6:1', '3:2'])); // the shell's printf; tail is exec'd after it
    await sleep(80); // longer than the hold: nothing may be decided before the first header
    s.out(INITIAL);
    await p;
    assert.deepEqual(lines(ev, A), ['a1', 'a2']);
    assert.deepEqual(lines(ev, B), ['b1']);
    tail.stop();
  });

  it('a header split across two reads survives an event loop that stalls between them (the hold expires first)', async () => {
    const { tail, ev, s } = await started([A, B], INITIAL);
    s.out(`\n==> ${A} <==\na3-par\n==> /lo`);
    await tick();
    // the rest is read in the same loop turn as the expired hold timer: it must be seen before the hold decides
    stat('.', () => s.out(`gs/b.log <==\nb2\n\n==> ${A} <==\ntial\n`));
    const until = Date.now() + 60;
    while (Date.now() < until) {
      // a stalled event loop (GC, a synchronous listener)
    }
    await sleep(80);
    assert.deepEqual(lines(ev, A), ['a1', 'a2', 'a3-partial']);
    assert.deepEqual(lines(ev, B), ['b1', 'b2']);
    tail.stop();
  });

  it('ignores shell start-up noise before the prologue; initialLines 0 reads but hides the backlog', async () => {
    const t = new FakeTransport();
    const tail = new RemoteTail(t, { files: [A], initialLines: 0 });
    const ev = collect(tail);
    const p = tail.start();
    const s = await t.nth(0);
    assert.match(s.command, /exec tail -c 2048 -F/);
    s.out('conda: activating base\n' + prologue(['10:5'], 'c', 2048) + `==> ${A} <==\nold1\nold2\n\n==> ${SENT} <==\n`);
    await p;
    s.out(`\n==> ${A} <==\nnew\n`); // tail's first follow output has a header (the sentinel was last)
    await sleep(60);
    assert.deepEqual(lines(ev, A), ['new']);
    tail.stop();
  });

  it('cuts lines longer than maxLineBytes and flags them', async () => {
    const t = new FakeTransport();
    const tail = new RemoteTail(t, { files: [A], maxLineBytes: 10 });
    const ev = collect(tail);
    const p = tail.start();
    const s = await t.nth(0);
    s.out(prologue(['1:1']) + `==> ${A} <==\n${'x'.repeat(100)}\nshort\n\n==> ${SENT} <==\n`);
    await p;
    const l = ev.filter((e) => e.type === 'line') as Array<{ line: string; truncated?: boolean }>;
    assert.equal(l.length, 2);
    assert.ok(l[0].truncated);
    assert.match(l[0].line, /^x{10} …\[truncated 90 more bytes\]$/);
    assert.equal(l[1].truncated, undefined);
    tail.stop();
  });
});

describe('tail: notices, reconnects and resume (fake transport)', () => {
  const A = 'a.log';
  const B = 'dir with space/b.log';

  it('turns stderr notices into markers (rotation = gone + appeared of a known file)', async () => {
    const { tail, ev, s } = await started([A, B], `==> ${A} <==\nx\n\n==> ${SENT} <==\n`, { stats: ['2:7', '-:-'] });
    s.err(`tail: cannot open '${B}' for reading: No such file or directory\n`);
    s.err(`tail: '${B}' has appeared;  following new file\n`);
    s.err(`tail: ${A}: file truncated\n`);
    s.err(`tail: '${A}' has become inaccessible: No such file or directory\n`);
    s.err(`tail: '${A}' has appeared;  following new file\n`);
    s.err(`tail: '${B}' has been replaced;  following new file\n`);
    s.err(`tail: '${SENT}' has become inaccessible: No such file or directory\n`);
    s.err(`tail: inotify cannot be used, reverting to polling\n`);
    await sleep(20);
    assert.deepEqual(markers(ev), [
      `missing:${B}`,
      `appeared:${B}`,
      `truncated:${A}`,
      `missing:${A}`,
      `rotated:${A}`,
      `rotated:${B}`,
      'error:',
    ]);
    tail.stop();
  });

  it('after a drop: disconnected, reconnect with the resume command, only lines after the anchor are shown', async () => {
    const { t, tail, ev, s } = await started([A], `==> ${A} <==\nl1\nl2\n\n==> ${SENT} <==\n`, { stats: ['6:42'] });
    s.out(`\n==> ${A} <==\nl3\n`);
    await sleep(60);
    s.end({ code: null }); // connection lost
    const s2 = await t.nth(1);
    // resume: expected inode 42, from = lo(6 + 3) - anchor(9) = 0
    assert.match(s2.command, /g a\.log 42 0\n/);
    assert.match(s2.command, /exec tail -c "\$m" -F -- a\.log "\$s"/);
    s2.out(prologue(['18:42'], 'c', 65554) + `==> ${A} <==\nl1\nl2\nl3\nl4\nl5\n\n==> ${SENT} <==\n`);
    await sleep(20);
    s2.out(`\n==> ${A} <==\nl6\n`);
    await sleep(60);
    assert.deepEqual(lines(ev), ['l1', 'l2', 'l3', 'l4', 'l5', 'l6']);
    assert.deepEqual(markers(ev), ['disconnected:', 'reconnected:']);
    assert.ok(tail.connected);
    tail.stop();
  });

  it('retries with backoff while the node is unreachable; a file replaced meanwhile is read from its start', async () => {
    const { t, tail, ev, s } = await started([A], `==> ${A} <==\nold\n\n==> ${SENT} <==\n`, { stats: ['4:42'] });
    t.failNext = 2;
    s.end({ code: null });
    const s2 = await t.nth(1);
    s2.out(prologue(['4:99'], 'c', 65540) + `==> ${A} <==\nnew\n\n==> ${SENT} <==\n`);
    await sleep(60);
    assert.deepEqual(lines(ev), ['old', 'new']);
    assert.deepEqual(markers(ev), ['disconnected:', 'reconnected:', `rotated:${A}`]);
    tail.stop();
  });

  it('a partial line pending at the drop is completed, and an undecided held newline is re-read', async () => {
    const { t, tail, ev, s } = await started([A], `==> ${A} <==\nl1\n\n==> ${SENT} <==\n`, { stats: ['3:42'] });
    s.out(`\n==> ${A} <==\nhalf-`);
    await sleep(60);
    s.out('line\n'); // its "\n" is still held back (a header could follow) when the connection drops
    s.end({ code: null });
    const s2 = await t.nth(1);
    // received: "l1\nhalf-line" (12 bytes, lo = 3 + 9 = 12; the held "\n" is not counted) → resume from byte 0
    assert.match(s2.command, /g a\.log 42 0\n/);
    s2.out(prologue(['18:42'], 'c', 65554) + `==> ${A} <==\nl1\nhalf-line\nnext\n\n==> ${SENT} <==\n`);
    await sleep(60);
    assert.deepEqual(lines(ev), ['l1', 'half-line', 'next']);
    tail.stop();
  });

  it('stop() closes the channel, rejects nothing afterwards and leaves no timers', async () => {
    const { t, tail, s } = await started([A], `==> ${A} <==\n\n==> ${SENT} <==\n`);
    s.out('x\n'); // leaves a held "\n" and a hold timer
    tail.stop();
    assert.ok(s.closed);
    assert.equal(tail.running, false);
    await sleep(50);
    assert.equal(t.streams.length, 1, 'no reconnect after stop');
  });

  it('start() rejects when the remote command ends before its backlog (e.g. no tail on the node)', async () => {
    const t = new FakeTransport();
    const tail = new RemoteTail(t, { files: [A] });
    const p = tail.start();
    const s = await t.nth(0);
    s.err('sh: 1: exec: tail: not found\n');
    s.end({ code: 127 });
    await assert.rejects(p, /could not start following a\.log: the remote tail exited with status 127: sh: 1: exec: tail: not found/);
    assert.equal(tail.running, false);
  });
});

describe('tail: ResumeSkipper', () => {
  it('finds the anchor across chunk boundaries and passes only what follows', () => {
    const anchor = Buffer.from('ANCHOR');
    for (let cut = 1; cut < 12; cut++) {
      const all = Buffer.from('xxANCHxxANCHORyyANCHORzz');
      const sk = new ResumeSkipper('search', anchor);
      const out: Buffer[] = [];
      for (let i = 0; i < all.length; i += cut) {
        const o = sk.push(all.subarray(i, i + cut));
        if (o) out.push(o);
      }
      assert.equal(Buffer.concat(out).toString(), 'yyANCHORzz', `cut ${cut}`);
      assert.ok(sk.finish().found);
    }
  });

  it('reports a miss with a bounded fallback', () => {
    const sk = new ResumeSkipper('search', Buffer.from('nope'), 0, 8);
    sk.push(Buffer.from('0123456789'));
    sk.push(Buffer.from('abcdef'));
    const r = sk.finish();
    assert.equal(r.found, false);
    assert.equal(r.fallback.toString(), '89abcdef');
    assert.equal(r.droppedBytes, 8);
  });
});

describe('tail: RemoteTail with GNU tail on this machine (LocalTransport)', function () {
  this.timeout(20_000);
  let dir: string;
  before(function () {
    if (!/GNU coreutils/.test(spawnSync('tail', ['--version'], { encoding: 'utf8' }).stdout ?? '')) this.skip();
  });
  beforeEach(() => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'gs-tail-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('follows two files, rotation and truncation, and resumes after the tail is killed without losing lines', async () => {
    const a = path.join(dir, 'a.log');
    const b = path.join(dir, 'b.log');
    writeFileSync(a, 'a1\n');
    writeFileSync(b, 'b1\n');
    const t = new LocalTransport({ ...process.env, XDG_CACHE_HOME: path.join(dir, 'cache') }, dir);
    const tail = new RemoteTail(t, { files: [a, b], reconnectDelaysMs: [50] });
    const ev = collect(tail);
    try {
      await tail.start();
      appendFileSync(a, 'a2\n');
      appendFileSync(b, 'b2\n');
      await waitFor('lines(ev).length === 4', () => lines(ev).length === 4, 5000, 20);
      writeFileSync(a, '');
      await waitFor('markers(ev).includes(`truncated:${a}`)', () => markers(ev).includes(`truncated:${a}`), 5000, 20);
      appendFileSync(a, 'a3\n');
      renameSync(b, b + '.1');
      writeFileSync(b, 'b3\n');
      await waitFor(
        "lines(ev, b).includes('b3') && lines(ev, a).includes('a3')",
        () => lines(ev, b).includes('b3') && lines(ev, a).includes('a3'),
        5000,
        20,
      );
      assert.ok(markers(ev).includes(`rotated:${b}`), markers(ev).join());
      // kill the tail process: the tail reconnects and catches up
      const pids = spawnSync('pgrep', ['-f', `^tail -n 200 -F -- ${a}`], { encoding: 'utf8' })
        .stdout.trim()
        .split('\n')
        .filter(Boolean);
      assert.equal(pids.length, 1);
      process.kill(Number(pids[0]), 'SIGKILL');
      await waitFor("markers(ev).includes('disconnected:')", () => markers(ev).includes('disconnected:'), 5000, 20);
      appendFileSync(a, 'a4 while away\n');
      appendFileSync(b, 'b4 while away\n');
      await waitFor(
        "lines(ev, b).includes('b4 while away') && lines(ev, a).includes('a4 while away')",
        () => lines(ev, b).includes('b4 while away') && lines(ev, a).includes('a4 while away'),
        5000,
        20,
      );
      appendFileSync(a, 'a5\n');
      await waitFor("lines(ev, a).includes('a5')", () => lines(ev, a).includes('a5'), 5000, 20);
      assert.deepEqual(lines(ev, a), ['a1', 'a2', 'a3', 'a4 while away', 'a5']);
      assert.deepEqual(lines(ev, b), ['b1', 'b2', 'b3', 'b4 while away']);
    } finally {
      tail.stop();
    }
  });
});
