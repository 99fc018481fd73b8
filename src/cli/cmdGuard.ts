/**
 * `gpu-sessions guard NODE start|status|stop` (issue 47): the guard that runs ON the node while the laptop sleeps.
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
import { parseS3Url, resolveRegion, s3ClientFor } from '../core/salvage/s3';
import {
  GuardSettings,
  GuardStatus,
  WhenDone,
  guardStartOperation,
  guardStatusOperation,
  guardStopOperation,
} from '../core/guard/operations';
import { MAX_POLICY_S, presignPost } from '../core/guard/s3Post';
import { DEFAULT_THRESHOLDS, parseThresholds } from '../core/data/verdict';
import type { Transport } from '../core/ssh/transport';
import type { CliIo } from './cliNode';

export const GUARD_EXIT_NOT_STARTED = 10;

export interface GuardStartCli {
  s3?: string;
  s3Endpoint?: string;
  to?: string;
  intervalS: number;
  data: string[] | null;
  whenDone: WhenDone;
  idleMin: number | null;
  until: string | null;
  yes: boolean;
  json: boolean;
  thresholds?: string;
  stopClientOnBadData: boolean;
  roots?: string[];
}

type Values = Record<string, string | boolean | string[] | undefined>;

/** The start options from the parsed flags, or a usage error in words. */
export function guardStartOptions(v: Values, json: boolean, usageError: (m: string) => never): GuardStartCli {
  const s3 = typeof v.s3 === 'string' ? v.s3 : undefined;
  const to = typeof v.to === 'string' ? v.to : undefined;
  if (!s3 === !to) usageError('guard start needs exactly one of --s3 s3://bucket/prefix or --to DIR_ON_NODE.');
  if (s3 && !parseS3Url(s3)) usageError(`--s3 is an s3://bucket/prefix URL (got "${s3.slice(0, 80)}").`);
  if (to && !to.startsWith('/') && !to.startsWith('~')) usageError('--to is an absolute folder on the node (or ~/...).');
  if (v['s3-endpoint'] !== undefined && !s3) usageError('--s3-endpoint only applies with --s3.');
  const intervalS = v.interval !== undefined ? Number(v.interval) : 300;
  if (!(intervalS >= 1 && intervalS <= 86_400)) usageError('--interval is a number of seconds from 1 to 86400.');
  const wd = (typeof v['when-done'] === 'string' ? v['when-done'] : 'notify') as WhenDone;
  if (!['notify', 'stop', 'terminate'].includes(wd)) usageError('--when-done is notify, stop or terminate.');
  const idle = v.idle !== undefined ? Number(v.idle) : null;
  if (idle !== null && !(idle > 0 && idle <= 10_080)) usageError('--idle is a number of minutes from 0 to 10080.');
  let until: string | null = null;
  if (typeof v.until === 'string') {
    const t = Date.parse(v.until);
    if (!Number.isFinite(t) || !/^\d{4}-\d\d-\d\dT/.test(v.until)) usageError('--until is an ISO time (2026-12-05T03:00:00Z).');
    if (t <= Date.now()) usageError('--until is in the past.');
    until = new Date(t).toISOString();
  }
  const data = typeof v.data === 'string' ? v.data.split(',').filter(Boolean) : null;
  if (typeof v.thresholds === 'string') {
    try {
      parseThresholds(v.thresholds);
    } catch (e) {
      usageError(`--thresholds: ${(e as Error).message}`);
    }
  }
  return {
    s3,
    s3Endpoint: typeof v['s3-endpoint'] === 'string' ? v['s3-endpoint'] : undefined,
    to,
    intervalS,
    data,
    whenDone: wd,
    idleMin: idle,
    until,
    yes: Boolean(v.yes),
    json,
    thresholds: typeof v.thresholds === 'string' ? v.thresholds : undefined,
    stopClientOnBadData: Boolean(v['stop-client-on-bad-data']),
  };
}

/** `~/x` on the node: the guard resolves it in its own home (the remote home is not known here). */
function nodePath(p: string): string {
  return p.replace(/\/+$/, '') || '/';
}

export async function cmdGuardStart(t: Transport, node: string, o: GuardStartCli, io: CliIo, signal?: AbortSignal): Promise<number> {
  const settings: GuardSettings = {
    target: o.s3 ?? nodePath(o.to!),
    s3Endpoint: o.s3Endpoint ?? null,
    intervalS: o.intervalS,
    data: o.data,
    whenDone: o.whenDone,
    idleMin: o.idleMin,
    until: o.until,
    credentialExpires: null,
  };
  let s3;
  if (o.s3) {
    const u = parseS3Url(o.s3)!;
    const prefix = u.prefix && !u.prefix.endsWith('/') ? u.prefix + '/' : u.prefix;
    const target = { bucket: u.bucket, prefix, endpoint: o.s3Endpoint };
    const creds = await s3ClientFor(target).config.credentials();
    const until = o.until ? Date.parse(o.until) + 3600_000 : Infinity;
    const post = presignPost(creds, {
      bucket: u.bucket,
      prefix,
      region: resolveRegion(target),
      endpoint: o.s3Endpoint,
      expires: new Date(Math.min(until, Date.now() + MAX_POLICY_S * 1000)),
      maxBytes: 5 * 1024 * 1024 * 1024,
    });
    settings.credentialExpires = post.expires;
    s3 = { bucket: u.bucket, prefix, post };
  }
  const to = o.to ? (o.to.startsWith('~/') ? o.to : nodePath(o.to)) : undefined;
  const a = await runOperation(
    t,
    guardStartOperation({
      settings,
      to,
      s3,
      roots: o.roots,
      thresholds: o.thresholds ? parseThresholds(o.thresholds) : DEFAULT_THRESHOLDS,
      stopClientOnBadData: o.stopClientOnBadData,
      replace: o.yes,
    }),
    signal,
  );
  const out = { node, ...a, settings: a.alreadyRunning ? a.settings : settings };
  if (o.json) io.out(JSON.stringify(out, null, 2) + '\n');
  else if (a.alreadyRunning)
    io.out(
      `A guard already runs on ${node} (pid ${a.pid ?? '?'}, ${a.settings?.target ?? '?'}): left as it is. --yes replaces its settings.\n`,
    );
  else if (a.started) {
    const until = o.until ? `, until ${o.until}` : '';
    const cred = settings.credentialExpires ? `; its S3 credential expires ${settings.credentialExpires}` : '';
    io.out(
      `Guard ${a.replaced ? 'restarted' : 'started'} on ${node} (pid ${a.pid}): every ${o.intervalS} s → ${settings.target}` +
        `, when done: ${o.whenDone}${until}${cred}.\n`,
    );
  } else io.err(`The guard did not start on ${node}: see ~/.gpu-sessions/guard/guard.log there.\n`);
  return a.started || a.alreadyRunning ? 0 : GUARD_EXIT_NOT_STARTED;
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
  return a.wasRunning && !a.stopped ? GUARD_EXIT_NOT_STARTED : 0;
}
