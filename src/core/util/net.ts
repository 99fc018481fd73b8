/** Host names that mean "this very machine". */

/**
 * A host that is the machine itself: `localhost`, the IPv4 loopback block, `::1`, and the bind-any addresses
 * `0.0.0.0` and `::` (a server bound there answers on loopback). Case-insensitive.
 */
export function isLoopback(host: string): boolean {
  const h = host.toLowerCase();
  return h === 'localhost' || h === '::1' || h === '0.0.0.0' || h === '::' || /^127\.\d+\.\d+\.\d+$/.test(h);
}
