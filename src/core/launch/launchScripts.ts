/**
 * Scripts on the node: upload the launch script through stdin, keep last.sh, run it detached.
 */
import { GpuSessionsError } from '../util/errors';
import { RemoteOperation, runOperation } from '../remote/operation';
import { shq } from '../util/quote';
import { AbortLike, ExecResult, Transport } from '../ssh/transport';
import { LaunchProfile, profileName } from './profile';
import { LAUNCH_DIR } from './launchCommon';

// ------------------------------------------------------------------------------------ scripts on the node

/** `~/.gpu-sessions/launch/last.sh` (shown as a diff only: a script cut at 4 MiB is shown as far as it came). */
function lastScriptOperation(): RemoteOperation<string | null> {
  return {
    name: 'last-script',
    command: `cat "$HOME"/${shq(LAUNCH_DIR + '/last.sh')} 2>/dev/null`,
    timeoutMs: 30_000,
    maxOutputBytes: 4 * 1024 * 1024,
    acceptTruncated: true,
    idempotent: true,
    parse: (r) => (r.code === 0 ? r.stdout.toString('utf8') : null),
  };
}

/** The node's last launched script (`~/.gpu-sessions/launch/last.sh`), or null. */
export async function readLastScript(t: Transport, signal?: AbortLike): Promise<string | null> {
  return runOperation(t, lastScriptOperation(), signal);
}

export function scriptFileName(profile: LaunchProfile, fallbackName: string | undefined, now = new Date()): string {
  const stamp = now
    .toISOString()
    .replace(/[-:]/g, '')
    .replace(/\.\d+Z$/, 'Z');
  return `${stamp}-${profileName(profile, fallbackName)}.sh`;
}

/** A remote write that failed: "<node>: could not <what>: <stderr or exit N>". */
export function writeFailed(nodeLabel: string, what: string, r: ExecResult): GpuSessionsError {
  return new GpuSessionsError('remote-failed', `${nodeLabel}: could not ${what}: ${r.stderr.toString('utf8').trim() || `exit ${r.code}`}`);
}

/** `GS-PATH <path>` then, when there was one, `GS-PREV` and the previous last.sh. */
export function parseUploadOutput(r: ExecResult, nodeLabel: string, fileName: string): { path: string; previous: string | null } {
  const out = r.stdout.toString('utf8');
  const m = /^GS-PATH (.*)\n/.exec(out);
  if (r.code !== 0 || !m) throw writeFailed(nodeLabel, `write the launch script to ~/${LAUNCH_DIR}/${fileName}`, r);
  const rest = out.slice(m[0].length);
  return { path: m[1], previous: rest.startsWith('GS-PREV\n') ? rest.slice('GS-PREV\n'.length) : null };
}

/** Writes the script (on stdin, never on a command line) to `~/.gpu-sessions/launch/<fileName>`. */
function uploadScriptOperation(
  fileName: string,
  script: string,
  nodeLabel: string,
): RemoteOperation<{ path: string; previous: string | null }> {
  if (!/^[A-Za-z0-9._-]+$/.test(fileName)) throw new GpuSessionsError('usage', `Bad script file name ${JSON.stringify(fileName)}.`);
  const body =
    'umask 022; d="$HOME/' +
    LAUNCH_DIR +
    '"; mkdir -p "$d" || exit 3; f="$d/$1"; ' +
    'cat > "$f.tmp" && mv -f "$f.tmp" "$f" && chmod 755 "$f" || exit 3; ' +
    'printf "GS-PATH %s\\n" "$f"; if [ -f "$d/last.sh" ]; then printf "GS-PREV\\n"; cat "$d/last.sh"; fi';
  return {
    name: 'upload-script',
    command: `sh -c ${shq(body)} sh ${shq(fileName)}`,
    stdin: script,
    timeoutMs: 60_000,
    maxOutputBytes: 64 * 1024 * 1024,
    parse: (r) => parseUploadOutput(r, nodeLabel, fileName),
  };
}

/** Upload through stdin (never on a command line); returns the remote path and the previous last.sh. */
export async function uploadScript(
  t: Transport,
  fileName: string,
  script: string,
  signal?: AbortLike,
): Promise<{ path: string; previous: string | null }> {
  return runOperation(t, uploadScriptOperation(fileName, script, t.label), signal);
}

interface ScriptRun {
  /** port → pid, from the script's `GS-STARTED <port> <pid>` lines. */
  started: Map<number, number>;
  errors: string[];
  code: number | null;
  output: string;
}

/** What a launch script printed: `GS-STARTED <port> <pid>` per instance, `GS-ERROR <why>` lines. */
export function parseRunOutput(r: ExecResult): ScriptRun {
  const out = r.stdout.toString('utf8');
  const err = r.stderr.toString('utf8');
  const started = new Map<number, number>();
  for (const m of out.matchAll(/^GS-STARTED (\d+) (\d+)$/gm)) started.set(Number(m[1]), Number(m[2]));
  const errors = [...(out + '\n' + err).matchAll(/^GS-ERROR (.*)$/gm)].map((m) => m[1]);
  return { started, errors, code: r.code, output: (out + err).trim() };
}

/**
 * Runs an uploaded script and copies it to last.sh. The servers are detached by then, so output past the
 * bound is read as far as it came (the GS-STARTED lines come first) rather than losing their pids.
 */
function runScriptOperation(fileName: string): RemoteOperation<ScriptRun> {
  const body =
    'd="$HOME/' +
    LAUNCH_DIR +
    '"; f="$d/$1"; sh "$f" </dev/null; rc=$?; ' +
    'cp -f "$f" "$d/last.sh.tmp" && mv -f "$d/last.sh.tmp" "$d/last.sh"; exit $rc';
  return {
    name: 'run-script',
    command: `sh -c ${shq(body)} sh ${shq(fileName)}`,
    timeoutMs: 120_000,
    maxOutputBytes: 64 * 1024 * 1024,
    acceptTruncated: true,
    parse: parseRunOutput,
  };
}

/** Run an uploaded script; it prints GS-STARTED lines and returns at once (the servers are detached). Copies it to last.sh. */
export async function runScript(t: Transport, fileName: string, signal?: AbortLike): Promise<ScriptRun> {
  return runOperation(t, runScriptOperation(fileName), signal);
}
