/** Shared pieces of the benchmarks. */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';

export function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Starts the shaping relay (test/helpers/relay.ts) in its own process; resolves with its port. */
export function startRelay(targetPort: number, delayMs: number, bytesPerSec: number): Promise<{ port: number; proc: ChildProcess }> {
  const script = path.resolve(__dirname, '..', 'test', 'helpers', 'relay.js');
  const proc = spawn(
    process.execPath,
    [script, '--target', String(targetPort), '--delay-ms', String(delayMs), '--bandwidth', String(bytesPerSec), '--lifetime-ms', '3600000'],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    let buf = '';
    proc.stdout!.on('data', (b: Buffer) => {
      buf += b.toString();
      const m = /\{"port":(\d+)\}/.exec(buf);
      if (m) resolve({ port: Number(m[1]), proc });
    });
    proc.once('exit', (c) => reject(new Error(`relay exited (${c})`)));
    setTimeout(() => reject(new Error('relay did not start')), 10_000).unref();
  });
}
