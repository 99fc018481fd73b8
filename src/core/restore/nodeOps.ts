/**
 * The remote operations of restore, each a described operation (script, parser, timeout, output bound). Paths
 * travel NUL-separated on stdin or inside a tar stream, or as single-quoted arguments; never built into a script.
 */
import { RemoteOperation, incomplete, stderrTail } from '../remote/operation';
import { nodeScript } from '../util/nodeScripts';
import { shq } from '../util/quote';
import { sectionPrologue, sectionedOperation, splitSections } from '../remote/sections';
import { parseListenPorts } from '../launch/launch';
import { safeMode } from './targets';

export interface NodeFacts {
  home: string;
  /** GPU indices nvidia-smi lists (null: it could not be asked). */
  gpus: number[] | null;
  /** GPUs with compute processes. */
  busyGpus: number[];
  /** Ports something listens on. */
  listening: number[];
}

export function nodeFactsOperation(node: string): RemoteOperation<NodeFacts> {
  return sectionedOperation({
    name: 'restore-node-facts',
    what: 'Reading the node (home, GPUs, ports)',
    node,
    script: (n) =>
      [
        sectionPrologue(n),
        'export LC_ALL=C',
        `sec home; printf '%s' "$HOME"`,
        'sec gpus; nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>/dev/null; echo "rc=$?"',
        'sec apps; nvidia-smi --query-compute-apps=gpu_uuid --format=csv,noheader 2>/dev/null | head -n 4096',
        `sec listen; awk 'FNR > 1 && $4 == "0A" { print $2 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null`,
        'sec end',
      ].join('\n') + '\n',
    parse: (text, nonce) => parseNodeFacts(text, nonce),
  });
}

function parseNodeFacts(text: string, nonce: string): NodeFacts {
  const s = splitSections(text, nonce);
  const sec = (name: string) => s.get(name) ?? '';
  const gtext = sec('gpus');
  const byUuid = new Map<string, number>();
  const gpus: number[] = [];
  for (const l of gtext.split('\n')) {
    const m = /^\s*(\d+)\s*,\s*(\S+)\s*$/.exec(l);
    if (m) {
      gpus.push(Number(m[1]));
      byUuid.set(m[2], Number(m[1]));
    }
  }
  const busy = new Set<number>();
  for (const l of sec('apps').split('\n')) {
    const g = byUuid.get(l.trim());
    if (g !== undefined) busy.add(g);
  }
  return {
    home: sec('home'),
    gpus: gpus.length ? gpus.sort((a, b) => a - b) : null,
    busyGpus: [...busy].sort((a, b) => a - b),
    listening: [...parseListenPorts(sec('listen')).keys()].sort((a, b) => a - b),
  };
}

export type TargetState = { t: 'absent' } | { t: 'file'; size: number; mode: string } | { t: 'link'; target: string } | { t: 'other' };

/** What is at each path on the node now: absent, a regular file (size, mode), a symlink (its target), or something else. */
export function targetStateOperation(paths: string[]): RemoteOperation<TargetState[]> {
  const body =
    'for f; do if [ -L "$f" ]; then printf "L\\0%s\\0" "$(readlink -- "$f")"; elif [ -f "$f" ]; then printf "F\\0%s\\0" "$(stat -c "%s %a" -- "$f")"; ' +
    'elif [ -e "$f" ]; then printf "O\\0\\0"; else printf "A\\0\\0"; fi; done';
  return perPathOperation('restore-target-state', body, paths, 300_000, 256 * 1024 * 1024, (r) =>
    parseTargetStates(r.stdout, paths.length, r),
  );
}

/** One read-only check per path: the paths go NUL-separated on stdin to `sh -c BODY` (never on a command line). */
function perPathOperation<T>(
  name: string,
  body: string,
  paths: string[],
  timeoutMs: number,
  maxOutputBytes: number,
  parse: RemoteOperation<T>['parse'],
): RemoteOperation<T> {
  return {
    name,
    command: `xargs -0 -r sh -c ${shq(body)} sh`,
    stdin: Buffer.from(paths.map((p) => p + '\0').join('')),
    timeoutMs,
    maxOutputBytes,
    idempotent: true,
    parse,
  };
}

export function parseTargetStates(out: Buffer, count: number, r?: Parameters<typeof incomplete>[1]): TargetState[] {
  const f = out.toString('utf8').split('\0');
  const res: TargetState[] = [];
  for (let i = 0; i + 1 < f.length && res.length < count; i += 2) {
    const [k, v] = [f[i], f[i + 1]];
    if (k === 'A') res.push({ t: 'absent' });
    else if (k === 'O') res.push({ t: 'other' });
    else if (k === 'L') res.push({ t: 'link', target: v });
    else if (k === 'F') {
      const m = /^(\d+) ([0-7]+)$/.exec(v);
      res.push(m ? { t: 'file', size: Number(m[1]), mode: m[2] } : { t: 'other' });
    } else break;
  }
  if (res.length !== count) throw incomplete(`Checking ${count} path(s) on the node answered for ${res.length} only.`, r);
  return res;
}

/** For each folder: ok, or the nearest existing folder above it that this user cannot write. */
export function writableOperation(dirs: string[]): RemoteOperation<Array<{ ok: boolean; at: string }>> {
  const body =
    'for d; do p=$d; while [ ! -e "$p" ] && [ "$p" != / ]; do p=$(dirname -- "$p"); done; ' +
    'if [ -d "$p" ] && [ -w "$p" ] && [ -x "$p" ]; then printf "ok\\0%s\\0" "$p"; else printf "no\\0%s\\0" "$p"; fi; done';
  return perPathOperation('restore-writable', body, dirs, 120_000, 64 * 1024 * 1024, (r) => {
    const f = r.stdout.toString('utf8').split('\0');
    const out: Array<{ ok: boolean; at: string }> = [];
    for (let i = 0; i + 1 < f.length; i += 2) out.push({ ok: f[i] === 'ok', at: f[i + 1] });
    if (out.length !== dirs.length) throw incomplete(`Checking ${dirs.length} folder(s) on the node answered for ${out.length} only.`, r);
    return out;
  });
}

/**
 * Extract a tar of temporary names (from writeTar, relative to `/`) on the node: no `-P`, and `-k` so that an
 * existing name (a link planted where a temporary name goes) is an error, never replaced or followed. The
 * folders above each name were checked first (safeParentsOperation).
 */
export function extractOperation(tar: Buffer, node: string): RemoteOperation<void> {
  return {
    name: 'restore-extract',
    command: 'tar -x -k -C / --no-same-owner -f -',
    stdin: tar,
    timeoutMs: 30 * 60_000,
    maxOutputBytes: 1024 * 1024,
    parse: (r) => {
      if (r.code !== 0) throw incomplete(`Writing files on ${node} failed (tar exit ${r.code}: ${stderrTail(r)}).`, r);
    },
  };
}

/** Append one piece of a large file to its temporary name (the first piece creates it and its folder). */
export function appendOperation(tmp: string, data: Buffer, first: boolean, node: string): RemoteOperation<void> {
  const dir = tmp.slice(0, tmp.lastIndexOf('/')) || '/';
  return {
    name: 'restore-append',
    // The first piece creates the temporary name with noclobber (an existing name, a planted link, fails).
    command: first
      ? `mkdir -p -- ${shq(dir)} && set -C && cat > ${shq(tmp)}`
      : `[ -f ${shq(tmp)} ] && [ ! -L ${shq(tmp)} ] && cat >> ${shq(tmp)}`,
    stdin: data,
    timeoutMs: 30 * 60_000,
    maxOutputBytes: 1024 * 1024,
    parse: (r) => {
      if (r.code !== 0) throw incomplete(`Writing ${tmp} on ${node} failed (exit ${r.code}: ${stderrTail(r)}).`, r);
    },
  };
}

export interface VerifyRecord {
  tmp: string;
  final: string;
  /** The mapped folder the file lands in: nothing between it and the file may resolve through a symlink. */
  base: string;
  sha256: string;
  mode: string;
  mtime: number;
}

type VerifyOutcome = { ok: true } | { ok: false; reason: string };

/**
 * On the node: hash each temporary file, and only when it matches the expected SHA-256 and its folder still
 * resolves to itself (SAFE_PARENT) set its mode and mtime and rename it over the final name (`mv -T`: never into
 * a folder, and a link at the final name is replaced, not followed); a mismatch is removed.
 */
export function verifyOperation(recs: VerifyRecord[]): RemoteOperation<VerifyOutcome[]> {
  const body =
    SAFE_PARENT +
    'i=$1 t=$2 f=$3 w=$4 m=$5 s=$6 b=$7; ' +
    'if [ ! -f "$t" ] || [ -L "$t" ]; then printf "%s missing\\n" "$i"; exit 0; fi; ' +
    'g=$(sha256sum < "$t" | cut -c1-64); ' +
    'if [ "$g" != "$w" ]; then rm -f -- "$t"; printf "%s mismatch %s\\n" "$i" "$g"; exit 0; fi; ' +
    'if ! safe "$f" "$b"; then rm -f -- "$t"; printf "%s unsafe %s\\n" "$i" "$(printf %s "$S" | tr "\\n" " ")"; exit 0; fi; ' +
    'chmod "$m" -- "$t" 2>/dev/null; touch -m -d "@$s" -- "$t" 2>/dev/null; ' +
    'if e=$(mv -f -T -- "$t" "$f" 2>&1); then printf "%s ok\\n" "$i"; else rm -f -- "$t"; printf "%s mv %s\\n" "$i" "$(printf %s "$e" | tr "\\n" " ")"; fi';
  const stdin = Buffer.from(
    recs
      .map((r, i) => [String(i), r.tmp, r.final, r.sha256, safeMode(r.mode), String(Math.floor(r.mtime)), r.base].join('\0') + '\0')
      .join(''),
  );
  return {
    name: 'restore-verify',
    command: `xargs -0 -r -n 7 sh -c ${shq(body)} sh`,
    stdin,
    timeoutMs: 60 * 60_000,
    maxOutputBytes: 16 * 1024 * 1024,
    parse: (r) => {
      const out: VerifyOutcome[] = recs.map(() => ({ ok: false, reason: 'the node did not answer for it' }));
      for (const l of r.stdout.toString('utf8').split('\n')) {
        const m = /^(\d+) (ok|missing|mismatch|mv|unsafe)(?: (.*))?$/.exec(l);
        if (!m || Number(m[1]) >= recs.length) continue;
        const i = Number(m[1]);
        if (m[2] === 'ok') out[i] = { ok: true };
        else if (m[2] === 'missing') out[i] = { ok: false, reason: 'the uploaded copy is missing on the node' };
        else if (m[2] === 'mismatch')
          out[i] = { ok: false, reason: `SHA-256 on the node ${m[3] ?? '?'} differs from the salvaged ${recs[i].sha256}` };
        else if (m[2] === 'unsafe') out[i] = { ok: false, reason: unsafeReason(m[3]) };
        else out[i] = { ok: false, reason: `could not put it in place: ${m[3] ?? ''}`.trim() };
      }
      return out;
    },
  };
}

const unsafeReason = (why: string | undefined) =>
  `not written: ${(why ?? 'a folder above it is not safe').trim()}; nothing was written through it`;

/**
 * A shell function for the node: `safe PATH BASE` succeeds when PATH's folder is BASE or below it and no folder
 * of it below BASE resolves through a symlink (its realpath is BASE's realpath plus the same names), else sets
 * S to why. Folders that do not exist yet are fine (they are created as real folders); BASE itself may resolve
 * anywhere (it is the user's or the home's folder).
 */
const SAFE_PARENT =
  'safe() { b=${2%/}; d=$(dirname -- "$1"); ' +
  'case "$d/" in "$b"/*) ;; *) S="its folder $d is outside $2"; return 1;; esac; ' +
  'e=$d; while [ ! -e "$e" ] && [ ! -L "$e" ]; do e=$(dirname -- "$e"); done; ' +
  'case "$e" in "$b"/*) ;; *) return 0;; esac; ' +
  'rb=$(realpath -e -- "${b:-/}" 2>/dev/null) || { S="cannot resolve $2"; return 1; }; ' +
  're=$(realpath -e -- "$e" 2>/dev/null) || { S="$e is a dangling symlink"; return 1; }; ' +
  'rb=${rb%/}; if [ "$re" != "$rb${e#"$b"}" ]; then S="$e resolves through a symlink (to $re)"; return 1; fi; ' +
  '[ -d "$e" ] || { S="$e is not a folder"; return 1; }; }; ';

/** For each path: may restore write it (SAFE_PARENT against its mapped folder)? Read-only. */
export function safeParentsOperation(recs: Array<{ path: string; base: string }>): RemoteOperation<VerifyOutcome[]> {
  const body =
    SAFE_PARENT +
    'i=$1; if safe "$2" "$3"; then printf "%s ok\\n" "$i"; else printf "%s unsafe %s\\n" "$i" "$(printf %s "$S" | tr "\\n" " ")"; fi';
  return {
    name: 'restore-safe-parents',
    command: `xargs -0 -r -n 3 sh -c ${shq(body)} sh`,
    stdin: Buffer.from(recs.map((r, i) => [String(i), r.path, r.base].join('\0') + '\0').join('')),
    timeoutMs: 300_000,
    maxOutputBytes: 64 * 1024 * 1024,
    idempotent: true,
    parse: (r) => {
      const out: VerifyOutcome[] = recs.map(() => ({ ok: false, reason: 'the node did not answer for it' }));
      for (const l of r.stdout.toString('utf8').split('\n')) {
        const m = /^(\d+) (ok|unsafe)(?: (.*))?$/.exec(l);
        if (m && Number(m[1]) < recs.length) out[Number(m[1])] = m[2] === 'ok' ? { ok: true } : { ok: false, reason: unsafeReason(m[3]) };
      }
      return out;
    },
  };
}

/**
 * Symlinks as links (`ln -s`), each only where its folder is safe (SAFE_PARENT); with replace, an existing file
 * or link there is removed first (never a folder).
 */
export function symlinkOperation(
  recs: Array<{ link: string; target: string; replace: boolean; base: string }>,
): RemoteOperation<VerifyOutcome[]> {
  const body =
    SAFE_PARENT +
    'i=$1 l=$2 t=$3 r=$4 b=$5; ' +
    'if ! safe "$l" "$b"; then printf "%s unsafe %s\\n" "$i" "$(printf %s "$S" | tr "\\n" " ")"; exit 0; fi; ' +
    'mkdir -p -- "$(dirname -- "$l")" 2>/dev/null; ' +
    'if [ "$r" = 1 ] && { [ -L "$l" ] || [ -f "$l" ]; }; then rm -f -- "$l"; fi; ' +
    'if e=$(ln -s -- "$t" "$l" 2>&1); then printf "%s ok\\n" "$i"; else printf "%s ln %s\\n" "$i" "$(printf %s "$e" | tr "\\n" " ")"; fi';
  return {
    name: 'restore-symlinks',
    command: `xargs -0 -r -n 5 sh -c ${shq(body)} sh`,
    stdin: Buffer.from(recs.map((r, i) => [String(i), r.link, r.target, r.replace ? '1' : '0', r.base].join('\0') + '\0').join('')),
    timeoutMs: 120_000,
    maxOutputBytes: 16 * 1024 * 1024,
    parse: (r) => {
      const out: VerifyOutcome[] = recs.map(() => ({ ok: false, reason: 'the node did not answer for it' }));
      for (const l of r.stdout.toString('utf8').split('\n')) {
        const m = /^(\d+) (ok|ln|unsafe)(?: (.*))?$/.exec(l);
        if (!m || Number(m[1]) >= recs.length) continue;
        out[Number(m[1])] =
          m[2] === 'ok'
            ? { ok: true }
            : m[2] === 'unsafe'
              ? { ok: false, reason: unsafeReason(m[3]) }
              : { ok: false, reason: m[3] ?? 'ln failed' };
      }
      return out;
    },
  };
}

export type GitRestoreState = 'applied' | 'already-applied' | 'clean' | 'no-repository' | 'failed';

/** Apply a salvaged `git diff` in a repository on the node (checked first; an already-applied diff is left alone). */
export function gitApplyOperation(repo: string, patch: Buffer): RemoteOperation<{ state: GitRestoreState; reason: string }> {
  return {
    name: 'restore-git-apply',
    command: `sh -c ${shq(nodeScript('restore/gitApply.sh'))} sh ${shq(repo)}`,
    stdin: patch,
    timeoutMs: 120_000,
    maxOutputBytes: 1024 * 1024,
    parse: (r) => {
      const o = r.stdout.toString('utf8');
      if (o.includes('GS-NOREPO')) return { state: 'no-repository', reason: `no git repository at ${repo} on the node` };
      if (o.includes('GS-ALREADY')) return { state: 'already-applied', reason: 'the uncommitted diff is already there' };
      if (o.includes('GS-APPLIED')) return { state: 'applied', reason: 'the uncommitted diff was applied' };
      const m = /GS-FAILED ([\s\S]*)/.exec(o);
      return { state: 'failed', reason: m ? m[1].trim().replace(/\s+/g, ' ') : `exit ${r.code}: ${stderrTail(r)}` };
    },
  };
}
