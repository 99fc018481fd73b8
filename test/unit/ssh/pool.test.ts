/**
 * The connection pool (core/ssh/pool): one transport per node, ProxyJump chains built from pooled hop
 * transports, loops and bad hops refused with a config error. Nothing connects: transports are lazy.
 */
import assert from 'node:assert/strict';
import { ConnectionPool } from '../../../src/core/ssh/pool';
import type { NodeSpec } from '../../../src/core/ssh/config';
import { KnownHostsStore } from '../../../src/core/ssh/knownHosts';
import { LocalTransport, SshTransport, type Transport } from '../../../src/core/ssh/transport';
import { GpuSessionsError } from '../../../src/core/util/errors';

const node = (name: string, extra: Partial<NodeSpec> = {}): NodeSpec => ({
  name,
  host: `${name}.example.invalid`,
  port: 22,
  identityFiles: [],
  source: 'ssh-config',
  ...extra,
});
/** The hop a transport reaches its node through (the pool hands it in as `jump`). */
const jumpOf = (t: Transport) => (t as unknown as { opts: { jump?: Transport } }).opts.jump;
const nodeOf = (t: Transport) => (t as SshTransport).node;

describe('connection pool (core/ssh/pool)', () => {
  const aliases: Record<string, NodeSpec> = {
    bastion: node('bastion', { user: 'jump' }),
    inner: node('inner', { proxyJump: 'bastion' }),
    loopA: node('loopA', { proxyJump: 'loopB' }),
    loopB: node('loopB', { proxyJump: 'loopA' }),
  };
  let pool: ConnectionPool;
  beforeEach(() => {
    pool = new ConnectionPool({ knownHosts: new KnownHostsStore([]), resolveHop: (s) => aliases[s] });
  });
  afterEach(() => pool.dispose());

  it('one transport per node: the same spec gives the same object; another user, port or jump a new one', () => {
    const a = pool.get(node('gpu1'));
    assert.ok(a instanceof SshTransport);
    assert.equal(pool.get(node('gpu1')), a);
    assert.notEqual(pool.get(node('gpu1', { user: 'other' })), a);
    assert.notEqual(pool.get(node('gpu1', { port: 2222 })), a);
    assert.notEqual(pool.get(node('gpu1', { proxyCommand: 'nc %h %p' })), a);
    assert.equal(pool.all().length, 4);
  });

  it('the local node is a LocalTransport', () => {
    assert.ok(pool.get(node('This machine', { source: 'local', host: 'localhost' })) instanceof LocalTransport);
  });

  it('ProxyJump "a,b" reaches the node through b, and b through a; hops are pooled and shared', () => {
    const t = pool.get(node('gpu', { proxyJump: 'bastion,jump2.example.invalid:2200' }));
    const hop2 = jumpOf(t)!;
    assert.equal(nodeOf(hop2).host, 'jump2.example.invalid');
    assert.equal(nodeOf(hop2).port, 2200);
    const hop1 = jumpOf(hop2)!;
    assert.equal(nodeOf(hop1).name, 'bastion');
    assert.equal(nodeOf(hop1).user, 'jump');
    assert.equal(jumpOf(hop1), undefined);
    const other = pool.get(node('gpu-b', { proxyJump: 'bastion' }));
    assert.equal(jumpOf(other), hop1, 'the same bastion transport for both nodes');
  });

  it("a hop alias's own ProxyJump is followed", () => {
    const t = pool.get(node('deep', { proxyJump: 'inner' }));
    assert.equal(nodeOf(jumpOf(t)!).name, 'inner');
    assert.equal(nodeOf(jumpOf(jumpOf(t)!)!).name, 'bastion');
  });

  it('a ProxyJump loop and a hop that is neither an alias nor an address are config errors', () => {
    const loop = (() => {
      try {
        pool.get(node('x', { proxyJump: 'loopA' }));
      } catch (e) {
        return e;
      }
    })();
    assert.ok(loop instanceof GpuSessionsError, String(loop));
    assert.equal(loop.code, 'config');
    assert.match(loop.message, /too long or loops/);
    assert.throws(
      () => pool.get(node('y', { proxyJump: 'user@[bad' })),
      (e: unknown) => e instanceof GpuSessionsError && e.code === 'config' && /neither a Host alias/.test(e.message),
    );
  });

  it('forget disposes and drops one node; dispose all of them', () => {
    const spec = node('gpu1');
    const a = pool.get(spec);
    let disposed = 0;
    const orig = a.dispose.bind(a);
    a.dispose = () => (disposed++, orig());
    pool.forget(spec);
    assert.equal(disposed, 1);
    assert.notEqual(pool.get(spec), a, 'a fresh transport after forget');
    pool.forget(node('never-seen'));
    pool.dispose();
    assert.equal(pool.all().length, 0);
  });
});
