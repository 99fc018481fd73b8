/**
 * `gpu-sessions guard NODE start|status|stop`: the guard that runs ON the node while the laptop sleeps.
 *
 *   start (--s3 s3://bucket/prefix [--s3-endpoint URL] | --to DIR_ON_NODE) [--interval S] [--data PATHS]
 *         [--when-done notify|stop|terminate] [--idle MIN] [--until ISO] [--yes] [--json]
 *   status [--json]      stop [--json]
 *
 * Exit codes: 0 ok (start: started, or one already running, reported); 2 usage; 4 unreachable; 10 the guard did
 * not start on the node; status: 0 whether or not a guard runs (`running` says).
 */
import { runOperation } from '../core/remote/operation';
import { formatBytes } from '../core/util/format';
import { GuardStatus, guardStatusOperation, guardStopOperation } from '../core/guard/operations';
import { GuardStartOptions, guardStart } from '../core/flows/guard';
import { awaySummary } from '../core/guard/summary';
import type { Transport } from '../core/ssh/transport';
import type { CliIo } from './cliNode';
import { EXIT } from './exitCodes';

export async function cmdGuardStart(t: Transport, node: string, o: GuardStartOptions, io: CliIo, signal?: AbortSignal): Promise<number> {
  const a = await guardStart(t, o, signal);
  const settings = a.settings;
  const out = { node, ...a };
  if (o.json) io.out(JSON.stringify(out, null, 2) + '\n');
  else if (a.alreadyRunning)
    io.out(
      `A guard already runs on ${node} (pid ${a.pid ?? '?'}, ${a.settings?.target ?? '?'}): left as it is` +
        `${a.renewed ? `; its S3 credential renewed until ${a.renewed}` : ''}. --yes replaces its settings.\n`,
    );
  else if (a.started) {
    const until = o.until ? `, until ${o.until}` : '';
    const cred = settings?.credentialExpires ? `; its S3 credential expires ${settings.credentialExpires}` : '';
    io.out(
      `Guard ${a.replaced ? 'restarted' : 'started'} on ${node} (pid ${a.pid}): every ${o.intervalS} s → ${settings?.target}` +
        `, when done: ${o.whenDone}${until}${cred}.\n`,
    );
  } else io.err(`The guard did not start on ${node}: see ~/.gpu-sessions/guard/guard.log there.\n`);
  return a.started || a.alreadyRunning ? 0 : EXIT.guardNotStarted;
}

export function guardStatusJson(node: string, s: GuardStatus): Record<string, unknown> {
  return {
    node,
    running: s.running,
    pid: s.pid,
    settings: s.settings,
    startedAt: s.startedAt,
    lastVerifiedSync: s.lastVerifiedSync,
    bytesAtRisk: s.bytesAtRisk,
    filesAtRisk: s.filesAtRisk,
    filesVerified: s.filesVerified,
    lastCycle: s.lastCycle,
    roots: s.roots,
    end: s.end,
    summary: awaySummary(s.journal, s.startedAt ?? undefined),
    journal: s.journal,
  };
}

export async function cmdGuardStatus(t: Transport, node: string, json: boolean, io: CliIo, signal?: AbortSignal): Promise<number> {
  const s = await runOperation(t, guardStatusOperation(), signal);
  if (json) {
    io.out(JSON.stringify(guardStatusJson(node, s), null, 2) + '\n');
    return 0;
  }
  io.out(
    s.running
      ? `Guard on ${node}: running (pid ${s.pid}) → ${s.settings?.target ?? '?'}, when done: ${s.settings?.whenDone ?? '?'}\n`
      : `Guard on ${node}: not running${s.end ? ` (ended: ${s.end})` : ''}\n`,
  );
  io.out(
    `  last verified sync: ${s.lastVerifiedSync ? `${s.lastVerifiedSync.at} (${s.lastVerifiedSync.files} files)` : 'none yet'}` +
      ` · at risk: ${s.bytesAtRisk === null ? '?' : formatBytes(s.bytesAtRisk)}\n`,
  );
  io.out(`  since it started: ${awaySummary(s.journal, s.startedAt ?? undefined)}\n`);
  for (const e of s.journal.slice(-20)) {
    const rest = Object.entries(e)
      .filter(([k]) => k !== 't' && k !== 'event' && k !== 'raw')
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
    io.out(`  ${e.t}  ${e.event}  ${rest.slice(0, 200)}\n`);
  }
  return 0;
}

export async function cmdGuardStop(t: Transport, node: string, json: boolean, io: CliIo, signal?: AbortSignal): Promise<number> {
  const a = await runOperation(t, guardStopOperation(), signal);
  if (json) io.out(JSON.stringify({ node, ...a }, null, 2) + '\n');
  else
    io.out(
      a.wasRunning
        ? `Guard on ${node} (pid ${a.pid}) ${a.stopped ? 'stopped' : 'did not stop within 15 s'}.\n`
        : `No guard runs on ${node}.\n`,
    );
  return a.wasRunning && !a.stopped ? EXIT.guardNotStarted : 0;
}
