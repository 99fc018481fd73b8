/**
 * Small files in parallel batches over a real OpenSSH sshd, read by the node's single-pass reader (frames.py) and by
 * the tar fallback (a node without python3): byte-identical through the writer threads, several batches at once, and
 * one batch whose stream fails loses nothing of the others.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { KnownHostsStore } from '../../src/core/ssh/knownHosts';
import { listNodes } from '../../src/core/ssh/nodes';
import { ConnectionPool } from '../../src/core/ssh/pool';
import { Salvager } from '../../src/core/flows/salvage';
import type { Transport } from '../../src/core/ssh/transport';
import { SimNode, startSimNode } from '../helpers/simnode';
import { walk } from '../helpers/walk';
import { setEnv } from '../helpers/withEnv';

const noSnapshot = async () => ({ json: {}, markdown: '', summary: '' });
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');
const FILES = 1500;

/**
 * A wrapper for `tool` on the node: with its mode file, a batch (its command line holding `match`) whose list names a
 * `poison` file fails (exit 2, a message on stderr). tar's batches hold "-cf -"; the node's reader (python3 running
 * frames.py) names itself "single-pass reader".
 */
const poisonWrapper = (tool: string, match: string) => `#!/bin/sh
case "$*" in
  *"${match}"*) if [ -f "$HOME/.evil/tar-poison" ]; then
      l=$(mktemp) || exit 1
      cat > "$l"
      if tr '\\0' '\\n' < "$l" | grep -q /poison; then rm -f "$l"; echo "simulated tar failure" >&2; exit 2; fi
      exec < "$l"
      rm -f "$l"
    fi ;;
esac
exec /usr/bin/${tool} "$@"
`;

for (const reader of ['frames', 'tar'] as const)
  describe(`salvage: small files in parallel ${reader} batches (real sshd)`, function () {
    this.timeout(240_000);
    let sim: SimNode;
    let base: string;
    let pool: ConnectionPool;
    let many: string;

    let restoreEnv = () => undefined as void;
    before(async function () {
      if (process.getuid?.() !== 0) this.skip();
      if (reader === 'tar') restoreEnv = setEnv({ GS_SALVAGE_READER: 'tar' });
      sim = await startSimNode({
        user: `gsbatches${reader === 'tar' ? 't' : ''}`,
        startServers: false,
        beforeStart: (home: string) => {
          many = path.join(home, 'many');
          for (let i = 0; i < FILES; i++) {
            const d = path.join(many, `part${i % 9}`);
            mkdirSync(d, { recursive: true });
            // Sizes from 0 B to ~24 KiB, random bytes: a misplaced or truncated byte shows.
            writeFileSync(path.join(d, `f${String(i).padStart(5, '0')}.jsonl`), randomBytes((i * 7919) % 24_577));
          }
          writeFileSync(path.join(many, 'part4', 'poison.jsonl'), 'the batch that carries me fails\n');
          mkdirSync(path.join(home, 'evilbin'), { recursive: true });
          writeFileSync(path.join(home, 'evilbin', 'tar'), poisonWrapper('tar', '-cf -'), { mode: 0o755 });
          writeFileSync(path.join(home, 'evilbin', 'python3'), poisonWrapper('python3', 'single-pass reader'), { mode: 0o755 });
          mkdirSync(path.join(home, '.ssh'), { recursive: true });
          writeFileSync(path.join(home, '.ssh', 'environment'), `PATH=${home}/evilbin:/usr/local/bin:/usr/bin:/bin\n`);
          mkdirSync(path.join(home, '.evil'), { recursive: true });
        },
      });
      base = mkdtempSync(path.join(os.tmpdir(), 'gs-batches-'));
      pool = new ConnectionPool({ knownHosts: new KnownHostsStore([sim.sshd.knownHostsFile]) });
    });
    after(async () => {
      restoreEnv();
      pool?.dispose();
      await sim?.stop();
      if (base) rmSync(base, { recursive: true, force: true });
    });

    /** Salvages ~/many, counting the tar streams open at once. */
    async function salvage(dest: string) {
      const node = listNodes({ sshConfigFile: sim.sshd.sshConfigFile }).nodes[0];
      const t0 = pool.get(node);
      let open = 0;
      let most = 0;
      const t = new Proxy(t0, {
        get(target, prop, recv) {
          const v = Reflect.get(target, prop, recv);
          if (prop !== 'stream') return typeof v === 'function' ? v.bind(target) : v;
          return async (cmd: string, o: unknown) => {
            const s = await (v as Transport['stream']).call(target, cmd, o as never);
            if (reader === 'tar' ? /\btar\b/.test(cmd) : cmd.includes('single-pass reader')) {
              most = Math.max(most, ++open);
              void s.done.finally(() => open--);
            }
            return s;
          };
        },
      });
      const s = new Salvager({ node: 'n', transport: t, base: dest, roots: [many], snapshot: noSnapshot });
      const m = (await s.run())!;
      return { m, dir: s.dir, most };
    }

    const nodeFiles = () => walk(many);

    it('salvages 1,500 files over several batches at once, byte-identical, verified', async () => {
      const dest = mkdtempSync(path.join(base, 'ok-'));
      const { m, dir, most } = await salvage(dest);
      const files = m.items.filter((i) => i.remotePath.startsWith(many + '/'));
      assert.equal(files.length, FILES + 1);
      assert.ok(most >= 2, `${reader} batches ran in parallel (at most ${most} at once)`);
      for (const it of files) {
        assert.equal(it.status, 'verified', `${it.remotePath}: ${it.reason}`);
        const mine = readFileSync(path.join(dir, it.localPath!));
        assert.equal(sha(mine), sha(readFileSync(it.remotePath)), it.remotePath);
        assert.equal(it.sha256, sha(mine));
      }
      assert.equal(nodeFiles().length, FILES + 1);
      assert.deepEqual(
        walk(dir).filter((p) => p.endsWith('.gs-partial')),
        [],
      );
      assert.equal(m.verdict, 'safe');
    });

    it("one batch's stream fails: its files are failed and absent, every other batch's files are verified", async () => {
      writeFileSync(path.join(sim.home, '.evil', 'tar-poison'), '');
      try {
        const dest = mkdtempSync(path.join(base, 'poison-'));
        const { m, dir } = await salvage(dest);
        const files = m.items.filter((i) => i.remotePath.startsWith(many + '/'));
        const failed = files.filter((i) => i.status !== 'verified');
        const ok = files.filter((i) => i.status === 'verified');
        assert.ok(
          failed.some((i) => i.remotePath.endsWith('/poison.jsonl')),
          'the poisoned file is not verified',
        );
        assert.ok(failed.length < files.length / 2, `only the poisoned batch fails (${failed.length} of ${files.length})`);
        assert.ok(ok.length > 0);
        for (const it of failed) {
          assert.equal(it.status, 'failed');
          assert.match(it.reason ?? '', /simulated tar failure/);
          assert.ok(!existsSync(path.join(dir, it.localPath!)), `${it.remotePath} must not be in place`);
        }
        for (const it of ok) assert.equal(sha(readFileSync(path.join(dir, it.localPath!))), sha(readFileSync(it.remotePath)));
        assert.equal(m.verdict, 'unsafe');
        assert.ok(m.reasons.includes('failed-items'));
        assert.deepEqual(
          walk(dir).filter((p) => p.endsWith('.gs-partial')),
          [],
        );
      } finally {
        rmSync(path.join(sim.home, '.evil', 'tar-poison'), { force: true });
      }
    });
  });
