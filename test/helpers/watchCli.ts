/** `gpu-sessions watch --json` run as a child process, its JSON lines collected (integration tests). */
import { ChildProcess, spawn } from 'node:child_process';
import * as path from 'node:path';
import { SimNode } from './simnode';

export const CLI = path.resolve(__dirname, '../../src/cli/main.js');

export interface Line {
  type: 'sample' | 'transition';
  node: string;
  time: string;
  port?: number;
  gpu?: number;
  mount?: string;
  from?: string;
  to?: string;
  class?: string;
  message?: string;
  subject?: string;
  [k: string]: unknown;
}

export class Watch {
  readonly lines: Line[] = [];
  readonly proc: ChildProcess;
  stderr = '';
  exit: number | null = null;
  constructor(sim: SimNode, args: string[], env: Record<string, string>) {
    this.proc = spawn(
      process.execPath,
      [CLI, '--ssh-config', sim.sshd.sshConfigFile, '--known-hosts', sim.sshd.knownHostsFile, 'watch', 'simnode', '--json', ...args],
      { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let buf = '';
    this.proc.stdout!.on('data', (d: Buffer) => {
      buf += d.toString('utf8');
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const l = buf.slice(0, nl);
        buf = buf.slice(nl + 1);
        if (l.trim()) this.lines.push(JSON.parse(l) as Line);
      }
    });
    this.proc.stderr!.on('data', (d: Buffer) => (this.stderr += d.toString('utf8')));
    this.proc.on('exit', (code) => (this.exit = code));
  }
  transitions(since: number): Line[] {
    return this.lines.filter((l) => l.type === 'transition' && Date.parse(l.time) >= since);
  }
  lastSample(): Line | undefined {
    return [...this.lines].reverse().find((l) => l.type === 'sample');
  }
  stop(): Promise<number | null> {
    if (this.exit !== null) return Promise.resolve(this.exit);
    return new Promise((resolve) => {
      this.proc.once('exit', (c) => resolve(c));
      this.proc.kill('SIGINT');
    });
  }
}
