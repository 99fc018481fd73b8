/**
 * Is the link to the node short (loopback, a LAN)? One SSH channel carries about its window (2 MiB) per round trip:
 * 40 MB/s at 50 ms, but more than a single stream's decryption can take below a few milliseconds, where parallel
 * ranges only add connections, threads and a second read on the node (measured on loopback: 512 MiB in 4.3 s on one
 * stream, 5.7 s in parallel ranges). The round trip is the SSH connection's own (ssh/transport.ts: roundTripMs, a request the
 * server answers at once), measured once per connection, the quickest of three; a command's would include the node
 * starting a shell (~70 ms on this project's test sshd).
 */
import type { Transport } from '../../ssh/transport';

/** Below this round trip (ms) one stream is not held back by its window. */
export const SHORT_LINK_MS = 5;

const measured = new WeakMap<Transport, Promise<number>>();

/** The connection's quickest round trip (ms); Infinity where the transport cannot say (no SSH connection of its own). */
export function linkRoundTrip(t: Transport): Promise<number> {
  let p = measured.get(t);
  if (!p) {
    const rt = (t as { roundTripMs?: () => Promise<number> }).roundTripMs?.bind(t);
    p = (async () => {
      if (!rt) return Infinity;
      let best = Infinity;
      for (let i = 0; i < 3; i++) best = Math.min(best, await rt().catch(() => Infinity));
      return best;
    })();
    measured.set(t, p);
  }
  return p;
}

/** Should a large file travel in parallel ranges? `GS_SALVAGE_PARALLEL=on|off` decides instead of the link. */
export async function parallelPays(t: Transport, env = process.env.GS_SALVAGE_PARALLEL): Promise<boolean> {
  if (env === 'on') return true;
  if (env === 'off') return false;
  return (await linkRoundTrip(t)) >= SHORT_LINK_MS;
}
