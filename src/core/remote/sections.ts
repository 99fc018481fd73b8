/**
 * Sectioned remote scripts: the one mechanism behind the probe, the salvage listing, the environment
 * snapshot and the launch preflight/scan. A POSIX sh script is fed on stdin (`sh -s`), prints
 * `@@<nonce>:<name>@@` markers (the per-run nonce means no file name or log line can forge a section)
 * and ends with an `end` section, so a cut-off run is detected instead of half-parsed.
 */
import { randomBytes } from 'node:crypto';
import { RemoteOperation, incomplete, stderrTail } from './operation';
import { shq } from '../util/quote';
import type { ExecResult } from '../ssh/transport';

export function newNonce(): string {
  return `GS${randomBytes(8).toString('hex')}`;
}

/** First lines of every sectioned script: the nonce and the `sec NAME` function. */
export function sectionPrologue(nonce: string): string {
  return `N=${shq(nonce)}\nsec() { printf '\\n@@%s:%s@@\\n' "$N" "$1"; }`;
}

export function sectionsComplete(text: string, nonce: string): boolean {
  return text.includes(`@@${nonce}:end@@`);
}

export function splitSections(text: string, nonce: string): Map<string, string> {
  const out = new Map<string, string>();
  const parts = ('\n' + text).split(`\n@@${nonce}:`);
  for (const p of parts.slice(1)) {
    const close = p.indexOf('@@\n');
    if (close < 0) continue;
    out.set(p.slice(0, close), p.slice(close + 3));
  }
  return out;
}

/** The first non-blank line of a section, trimmed; null when it has none (or is absent). */
export function firstLine(section: string | undefined): string | null {
  const l = (section ?? '')
    .split('\n')
    .map((x) => x.trim())
    .find((x) => x.length > 0);
  return l ?? null;
}

interface SectionedSpec<T> {
  name: string;
  /** For the error when the run was cut off: "<what> did not complete on <node> (exit N: stderr)". */
  what: string;
  node: string;
  /** The whole script (starting with sectionPrologue(nonce)); must end with `sec end`. */
  script: (nonce: string) => string;
  parse: (text: string, nonce: string, r: ExecResult) => T;
  /** Default 60 s. */
  timeoutMs?: number;
  /** Default 64 MiB. */
  maxOutputBytes?: number;
  idempotent?: boolean;
  /** Applied to stderr before it goes into an error message (e.g. redaction). */
  cleanStderr?: (s: string) => string;
}

export function sectionedOperation<T>(spec: SectionedSpec<T>): RemoteOperation<T> {
  const nonce = newNonce();
  return {
    name: spec.name,
    // GPU_SESSIONS_OP marks the script and its children as ours: a salvage listing running beside it (the
    // snapshot's pip freeze writes its temp files) never takes them for writers under the folders.
    command: 'GPU_SESSIONS_OP=1 sh -s',
    stdin: spec.script(nonce),
    timeoutMs: spec.timeoutMs ?? 60_000,
    maxOutputBytes: spec.maxOutputBytes ?? 64 * 1024 * 1024,
    idempotent: spec.idempotent ?? true,
    parse(r: ExecResult) {
      const text = r.stdout.toString('utf8');
      if (!sectionsComplete(text, nonce)) {
        const err = stderrTail(r, 3, spec.cleanStderr);
        throw incomplete(`${spec.what} did not complete on ${spec.node} (exit ${r.code}${err ? `: ${err}` : ''}).`, r, {
          operation: spec.name,
        });
      }
      return spec.parse(text, nonce, r);
    },
  };
}
