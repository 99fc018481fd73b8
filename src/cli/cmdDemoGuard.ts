/**
 * `gpu-sessions demo --guard`: the demo node runs its own guard, to the demo's S3 (s3rver) when there
 * is one, else to a folder beside the demo's home. The demo shows the guard's first verified sync and its status;
 * the salvage that follows counts what the guard verified in S3. The guard is stopped before the demo ends (it is a
 * detached process on this machine, as it would be on a node).
 */
import * as path from 'node:path';
import { runOperation } from '../core/remote/operation';
import { guardStatusOperation, guardStopOperation } from '../core/guard/operations';
import { GuardStartOptions } from '../core/flows/guard';
import type { Transport } from '../core/ssh/transport';
import type { CliIo } from './cliNode';
import { cmdGuardStart, cmdGuardStatus } from './cmdGuard';

/** How often the demo's guard syncs (a real one: --interval, default 300 s). */
const DEMO_INTERVAL_S = 5;

/** The demo guard's settings: S3 under `guard/` of the demo bucket, else `DIR/guard-copy` (outside the demo home). */
export function demoGuardOptions(dir: string, s3: { endpoint: string; bucket: string } | null): GuardStartOptions {
  return {
    ...(s3 ? { s3: `s3://${s3.bucket}/guard/`, s3Endpoint: s3.endpoint } : { to: path.join(dir, 'guard-copy') }),
    intervalS: DEMO_INTERVAL_S,
    data: [],
    whenDone: 'notify',
    idleMin: null,
    until: null,
    yes: true,
    json: false,
    stopClientOnBadData: false,
    // the demo node is this machine: the guard lists the demo's home, never this host's volumes
    roots: ['~'],
  };
}

/**
 * Starts the guard and shows it once its first pass copied and verified files (at most `waitS` seconds). Everything goes to stderr:
 * stdout stays the demo's one answer (the salvage JSON with --json). False when it did not start.
 */
export async function demoGuardStart(t: Transport, node: string, o: GuardStartOptions, io: CliIo, waitS = 60): Promise<boolean> {
  const err: CliIo = { ...io, out: (s) => io.err(s) };
  io.err(`\nStarting the node's own guard (it keeps the work safe while the laptop sleeps)…\n`);
  if ((await cmdGuardStart(t, node, o, err)) !== 0) return false;
  const until = Date.now() + waitS * 1000;
  while (Date.now() < until) {
    // its first pass copied and verified files (a live job keeps some at risk: the last verified sync may come later)
    const s = await runOperation(t, guardStatusOperation(20));
    if (s.lastVerifiedSync || !s.running || s.journal.some((e) => e.event === 'sync' && Number(e.copied) > 0)) break;
    await new Promise((r) => setTimeout(r, 1000));
  }
  await cmdGuardStatus(t, node, false, err);
  io.err(`  (try: gpu-sessions guard ${node} status, with the ssh config above)\n`);
  return true;
}

/** Stops the demo's guard (never left running after the demo). */
export async function demoGuardStop(t: Transport, node: string, io: CliIo): Promise<void> {
  try {
    const a = await runOperation(t, guardStopOperation());
    if (a.wasRunning) io.err(`The demo's guard (pid ${a.pid}) ${a.stopped ? 'stopped' : 'did not stop within 15 s'}.\n`);
  } catch (e) {
    io.err(`The demo's guard could not be stopped: ${(e as Error).message}\n`);
  }
}
