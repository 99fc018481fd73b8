/**
 * The guard's flows above the operations, shared by the CLI (`gpu-sessions guard`) and the MCP tools:
 * the start options checked from flag-shaped values, the S3 credential signed here (./s3Post), the start.
 */
import { runOperation } from '../remote/operation';
import { parseS3Url, resolveRegion, s3ClientFor } from '../salvage/s3/s3';
import { DEFAULT_THRESHOLDS, parseThresholds } from '../data/verdict';
import type { Transport } from '../ssh/transport';
import { GuardSettings, GuardStartAnswer, WhenDone, guardStartOperation } from '../guard/operations';
import { MAX_POLICY_S, presignPost } from '../guard/s3Post';

export interface GuardStartOptions {
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

type FlagValues = Record<string, string | boolean | string[] | undefined>;

/** The start options from the parsed flags, or a usage error in words. */
export function guardStartOptions(v: FlagValues, json: boolean, usageError: (m: string) => never): GuardStartOptions {
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
  // the data check always runs: on the named files, else on the ones `gpu-sessions data` discovers
  const data = typeof v.data === 'string' ? v.data.split(',').filter(Boolean) : [];
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

interface GuardStarted extends GuardStartAnswer {
  /** The settings of the guard now running: the new ones, or the running guard's (alreadyRunning). */
  settings: GuardSettings | null;
}

/** Signs the S3 credential (when --s3), sends the guard and starts it (or reports the running one). */
export async function guardStart(t: Transport, o: GuardStartOptions, signal?: AbortSignal): Promise<GuardStarted> {
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
  return { ...a, settings: a.alreadyRunning ? a.settings : settings };
}
