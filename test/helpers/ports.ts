import { findFreePortBlock } from '../../src/sim/demoServer';

/**
 * A block of `n` free loopback ports for a test, below Linux's ephemeral range (32768–60999): there, the local
 * port of any outgoing connection (ssh, /health polls) can take a port between the check and the simulated
 * server's bind, and that server then exits with EADDRINUSE (seen as "6 of 7 servers" under load).
 */
export function freeTestPorts(n: number): Promise<number> {
  return findFreePortBlock(20000 + Math.floor(Math.random() * (10000 - n)), n);
}
