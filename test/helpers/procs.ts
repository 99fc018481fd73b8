/** Processes on this machine that belong to a folder: its path in their argv, or their working directory inside it. */
import { readFileSync, readdirSync, readlinkSync } from 'node:fs';

export interface FolderProcess {
  pid: number;
  /** The argv joined by spaces, first 120 characters. */
  cmd: string;
}

export function processesUnder(dir: string): FolderProcess[] {
  const out: FolderProcess[] = [];
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      const cmd = readFileSync(`/proc/${d}/cmdline`, 'utf8');
      let cwd = '';
      try {
        cwd = readlinkSync(`/proc/${d}/cwd`);
      } catch {
        /* not readable or gone */
      }
      if (cmd.includes(dir) || cwd === dir || cwd.startsWith(dir + '/'))
        out.push({ pid: Number(d), cmd: cmd.replace(/\0/g, ' ').slice(0, 120) });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** True while process `pid` runs (a zombie counts as gone). */
export function processRunning(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}
