/** core/node/lastSeenServers: a crashed server stays listed, as last seen, while the guard judges its port crashed. */
import assert from 'node:assert/strict';
import { LastSeenServers } from '../../../src/core/node/lastSeenServers';
import { server } from '../../helpers/sglangServer';

const argv = (port: number) => ['python3', '-m', 'sglang.launch_server', '--model-path', '/m', '--port', String(port)];

describe('last seen servers (core/node/lastSeenServers)', () => {
  it('a server gone from the probe whose port is crashed: listed with the argv it ran with and the message', () => {
    const seen = new LastSeenServers();
    const a = server(100, 30000, argv(30000));
    const b = server(200, 30001, argv(30001));
    seen.observe([a, b]);
    const problems = [{ to: 'crashed', port: 30001, message: 'RuntimeError: CUDA out of memory', class: 'oom' }];
    assert.deepEqual(seen.crashed([a], problems), [{ server: b, message: 'RuntimeError: CUDA out of memory', class: 'oom' }]);
    assert.deepEqual(seen.crashed([a, b], problems), [], 'still listed by the probe: its own row shows it');
  });

  it('not crashed (stopped by you, stalled, another subject) or never seen: not listed', () => {
    const seen = new LastSeenServers();
    seen.observe([server(100, 30000, argv(30000))]);
    assert.deepEqual(seen.crashed([], [{ to: 'stalled', port: 30000, message: 'x' }]), []);
    assert.deepEqual(seen.crashed([], [{ to: 'crashed', message: 'node' }]), []);
    assert.deepEqual(seen.crashed([], [{ to: 'crashed', port: 30005, message: 'x' }]), []);
    seen.forget(30000);
    assert.deepEqual(seen.crashed([], [{ to: 'crashed', port: 30000, message: 'x' }]), []);
  });

  it('a port keeps its latest process; at most 64 ports, the oldest sighting goes first', () => {
    const seen = new LastSeenServers();
    seen.observe([server(1, 30000, argv(30000))]);
    seen.observe([server(2, 30000, argv(30000))]);
    assert.equal(seen.get(30000)?.pid, 2);
    for (let p = 31000; p < 31064; p++) seen.observe([server(p, p, argv(p))]);
    assert.equal(seen.get(30000), undefined);
    assert.equal(seen.get(31000)?.pid, 31000);
  });
});
