/**
 * The node guard's three described operations: start, status and stop. Each is `python3 -` with the
 * guard's own file on stdin, a PAYLOAD line first (base64 JSON: no name from the user is ever part of a command
 * line), answering ONE `@@<nonce>@@ {json}` line. The node's answer is hostile: read as JSON, every field checked.
 */
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import { type Reads, documentProblem } from '../util/document';
import { RemoteOperation, incomplete, malformed, stderrTail } from '../remote/operation';
import { buildListingScript, HUB_CACHE_PATTERNS, SECRET_STORE_RULES } from '../salvage/plan/listing';
import { dataScript } from '../data/operation';
import { DEFAULT_THRESHOLDS, DataThresholds } from '../data/verdict';
import type { ExecResult } from '../ssh/transport';
import type { PresignedPost } from './s3Post';
import { GuardPyFile, guardPy } from './script';

export type WhenDone = 'notify' | 'stop' | 'terminate';

/** The settings as the user gave them (shown by status; never a credential). */
export interface GuardSettings {
  target: string;
  s3Endpoint: string | null;
  intervalS: number;
  data: string[] | null;
  whenDone: WhenDone;
  idleMin: number | null;
  until: string | null;
  credentialExpires: string | null;
}

const bounded = z.string().max(4096);
const boundedOrNull = bounded.nullable().optional();

/**
 * The settings as the node echoes them back (its state file, a running guard's answer): hostile, so each field is
 * checked and bounded; settings that do not fit are no settings (null), as an unreadable state file is.
 */
const guardSettingsSchema = z.object({
  target: bounded,
  s3Endpoint: boundedOrNull,
  intervalS: z.number().finite().positive(),
  data: z.array(bounded).max(10_000).nullable().optional(),
  whenDone: z.enum(['notify', 'stop', 'terminate']),
  idleMin: z.number().finite().nonnegative().nullable().optional(),
  until: boundedOrNull,
  credentialExpires: boundedOrNull,
});
/** Every settings object this version sends is one it reads back (checked at compile time). */
type SettingsDocument = Reads<typeof guardSettingsSchema, GuardSettings>;

/** The node's settings when they are settings (the object as the node sent it), else null. */
function settingsOf(v: unknown): SettingsDocument | null {
  return documentProblem(guardSettingsSchema, v) === null ? (v as SettingsDocument) : null;
}

interface GuardStartInput {
  settings: GuardSettings;
  to?: string;
  s3?: { bucket: string; prefix: string; post: PresignedPost };
  roots?: string[];
  thresholds?: DataThresholds;
  /** Files larger than this are left on the node, as salvage leaves them (default 256 MiB). */
  maxFileBytes?: number;
  rateBytesPerS?: number;
  /** Stop the generation client when its output is degenerate (default: record it). */
  stopClientOnBadData?: boolean;
  replace: boolean;
}

const b64 = (s: string) => Buffer.from(s, 'utf8').toString('base64');

/** The guard's configuration file (0600 on the node): salvage's rule table travels in it, generated from listing.ts. */
export function guardConfig(i: GuardStartInput, listNonce: string, dataNonce: string): Record<string, unknown> {
  const untilEpoch = i.settings.until ? Date.parse(i.settings.until) / 1000 : null;
  const credEpoch = i.s3 ? Date.parse(i.s3.post.expires) / 1000 : null;
  return {
    settings: i.settings,
    intervalS: i.settings.intervalS,
    ...(i.to ? { to: i.to } : {}),
    ...(i.s3 ? { s3: { url: i.s3.post.url, bucket: i.s3.bucket, prefix: i.s3.prefix, fields: i.s3.post.fields } } : {}),
    credentialExpires: credEpoch,
    credentialExpiresIso: i.s3?.post.expires ?? null,
    listNonce,
    rules: {
      sshDir: SECRET_STORE_RULES.sshDir.source,
      sshCopyable: SECRET_STORE_RULES.sshCopyable.source,
      keyName: SECRET_STORE_RULES.keyName.source,
      secretTails: SECRET_STORE_RULES.tails,
      hubCache: HUB_CACHE_PATTERNS.map((r) => r.source),
    },
    maxFileBytes: i.maxFileBytes ?? 256 * 1024 * 1024,
    rateBytesPerS: i.rateBytesPerS ?? 64 * 1024 * 1024,
    data: Boolean(i.settings.data),
    dataNonce,
    thresholds: i.thresholds ?? DEFAULT_THRESHOLDS,
    whenDone: i.settings.whenDone,
    idleMin: i.settings.idleMin,
    untilEpoch,
    stopClientOnBadData: Boolean(i.stopClientOnBadData),
  };
}

export function pyOperation<T>(
  name: string,
  payload: Record<string, unknown>,
  timeoutMs: number,
  parse: (o: Record<string, unknown>) => T,
  file: GuardPyFile = 'guard.py',
) {
  const nonce = `GS${randomBytes(8).toString('hex')}`;
  const stdin = `PAYLOAD = "${b64(JSON.stringify({ ...payload, nonce }))}"\n${guardPy(file)}`;
  const op: RemoteOperation<T> = {
    name,
    command: 'python3 -',
    stdin,
    timeoutMs,
    maxOutputBytes: 8 * 1024 * 1024,
    parse(r: ExecResult): T {
      const pre = `@@${nonce}@@ `;
      const line = r.stdout
        .toString('utf8')
        .split('\n')
        .find((l) => l.startsWith(pre));
      if (!line) {
        const err = stderrTail(r, 3);
        if (r.code === 127 || /python3: (command )?not found/.test(err))
          throw incomplete('python3 is not on the node: the guard runs there with python3 (every SGLang node has it).', r);
        throw incomplete(`the guard's ${name} did not answer (exit ${r.code}${err ? `: ${err}` : ''}).`, r, { operation: name });
      }
      let o: unknown;
      try {
        o = JSON.parse(line.slice(pre.length));
      } catch {
        throw malformed(`the guard's ${name} answered something that is not JSON`);
      }
      if (!o || typeof o !== 'object' || Array.isArray(o)) throw malformed(`the guard's ${name} answered something that is not an object`);
      return parse(o as Record<string, unknown>);
    },
  };
  return op;
}

const int = (v: unknown): number | null => (typeof v === 'number' && Number.isInteger(v) && v > 0 ? v : null);

export interface GuardStartAnswer {
  started: boolean;
  alreadyRunning: boolean;
  replaced: boolean;
  pid: number | null;
  /** The running guard's settings (when alreadyRunning). */
  settings: GuardSettings | null;
  /** A running guard to the same S3 place got the new credential: its expiry. */
  renewed: string | null;
}

export function guardStartOperation(i: GuardStartInput): RemoteOperation<GuardStartAnswer> {
  const listNonce = `GS${randomBytes(8).toString('hex')}`;
  const dataNonce = `GS${randomBytes(8).toString('hex')}`;
  const files: Record<string, string> = {
    'guard.py': b64(guardPy('guard.py')),
    'provider.py': b64(guardPy('provider.py')),
    'config.json': b64(JSON.stringify(guardConfig(i, listNonce, dataNonce))),
    // its own state and its --to copy are never entered (a copy inside the work's folders would be listed again)
    'listing.sh': b64(buildListingScript(listNonce, { roots: i.roots, prune: i.to ? [i.to] : [] })),
  };
  if (i.settings.data)
    files['data.py'] = b64(
      dataScript({ paths: i.settings.data.length ? i.settings.data : undefined, roots: i.roots, spread: false, count: false }, dataNonce),
    );
  // a guard already running to the same S3 place gets the new credential (the laptop renews it when it is back)
  const renew = i.s3
    ? {
        bucket: i.s3.bucket,
        prefix: i.s3.prefix,
        url: i.s3.post.url,
        fields: i.s3.post.fields,
        expires: Date.parse(i.s3.post.expires) / 1000,
        expiresIso: i.s3.post.expires,
      }
    : null;
  return pyOperation('guard-start', { op: 'start', replace: i.replace, files, renew }, 60_000, (o) => ({
    started: o.started === true,
    alreadyRunning: o.alreadyRunning === true,
    replaced: o.replaced === true,
    pid: int(o.pid),
    settings: settingsOf(o.settings),
    renewed: str(o.renewed),
  }));
}

export interface GuardEvent {
  t: string;
  event: string;
  [k: string]: unknown;
}

export interface GuardStatus {
  running: boolean;
  pid: number | null;
  settings: GuardSettings | null;
  startedAt: string | null;
  lastVerifiedSync: { at: string; files: number; target: string; beingWritten: number } | null;
  lastCycle: string | null;
  bytesAtRisk: number | null;
  filesAtRisk: number | null;
  filesVerified: number | null;
  roots: string[];
  end: string | null;
  journal: GuardEvent[];
}

const str = (v: unknown): string | null => (typeof v === 'string' ? v.slice(0, 4096) : null);
const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : null);

/** The status answer, checked field by field (a hostile node can put anything in its state file). */
export function parseGuardStatus(o: Record<string, unknown>): GuardStatus {
  const st = o.state && typeof o.state === 'object' && !Array.isArray(o.state) ? (o.state as Record<string, unknown>) : {};
  const ls = st.lastVerifiedSync && typeof st.lastVerifiedSync === 'object' ? (st.lastVerifiedSync as Record<string, unknown>) : null;
  const journal: GuardEvent[] = [];
  for (const e of Array.isArray(o.journal) ? o.journal : []) {
    if (!e || typeof e !== 'object' || Array.isArray(e)) continue;
    const r = e as Record<string, unknown>;
    if (typeof r.t !== 'string' || typeof r.event !== 'string') continue;
    journal.push({ ...r, t: r.t.slice(0, 40), event: r.event.slice(0, 80) });
  }
  return {
    running: o.running === true,
    pid: o.running === true ? int(o.pid) : null,
    settings: settingsOf(st.settings),
    startedAt: str(st.startedAt),
    lastVerifiedSync:
      ls && typeof ls.at === 'string'
        ? { at: ls.at.slice(0, 40), files: num(ls.files) ?? 0, target: str(ls.target) ?? '', beingWritten: num(ls.beingWritten) ?? 0 }
        : null,
    lastCycle: str(st.lastCycle),
    bytesAtRisk: num(st.bytesAtRisk),
    filesAtRisk: num(st.filesAtRisk),
    filesVerified: num(st.filesVerified),
    roots: Array.isArray(st.roots) ? st.roots.filter((x): x is string => typeof x === 'string').slice(0, 100) : [],
    end: str(st.end),
    journal,
  };
}

export function guardStatusOperation(journalLines = 200): RemoteOperation<GuardStatus> {
  return { ...pyOperation('guard-status', { op: 'status', journalLines }, 30_000, parseGuardStatus), idempotent: true };
}

interface GuardStopAnswer {
  wasRunning: boolean;
  stopped: boolean;
  pid: number | null;
}

export function guardStopOperation(): RemoteOperation<GuardStopAnswer> {
  return pyOperation('guard-stop', { op: 'stop' }, 30_000, (o) => ({
    wasRunning: o.wasRunning === true,
    stopped: o.stopped === true,
    pid: int(o.pid),
  }));
}
