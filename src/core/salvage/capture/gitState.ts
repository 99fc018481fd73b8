/**
 * A repository's state for salvage: `git status` (branch, HEAD, porcelain), the remotes, and `git diff`
 * of tracked changes — one sectioned run (per-run nonce: a branch or file name cannot forge a marker).
 */
import { RemoteOperation, incomplete, stderrTail } from '../../remote/operation';
import { shq } from '../../util/quote';
import { newNonce, sectionPrologue, sectionsComplete, splitSections } from '../../remote/sections';

type GitState = { ok: true; status: string; diff: string } | { ok: false; reason: string };

export function gitStateOperation(repoPath: string): RemoteOperation<GitState> {
  const nonce = newNonce();
  const script = [
    sectionPrologue(nonce),
    `cd ${shq(repoPath)} 2>/dev/null || { echo "cannot enter the repository" >&2; exit 3; }`,
    `command -v git >/dev/null 2>&1 || { echo "git is not installed on the node" >&2; exit 4; }`,
    'sec status',
    `echo "# git status ($(git rev-parse --abbrev-ref HEAD 2>/dev/null) $(git rev-parse HEAD 2>/dev/null))"`,
    'git status --porcelain=v1 -b 2>&1; echo; echo "# git remote -v"; git remote -v 2>&1',
    'sec diff',
    'git diff HEAD 2>/dev/null || git diff 2>&1',
    'sec end',
  ].join('\n');
  return {
    name: 'git-state',
    command: 'GPU_SESSIONS_OP=1 sh -s', // ours: never a writer in a listing beside it (git may take index.lock)
    stdin: script + '\n',
    timeoutMs: 120_000,
    maxOutputBytes: 64 * 1024 * 1024,
    idempotent: true,
    parse(r) {
      // Killed or dropped (no exit status): cut short, not a verdict on the repository.
      if (r.code === null) throw incomplete(`Reading git state of ${repoPath} did not complete (${r.signal ?? 'no exit status'}).`, r);
      if (r.code !== 0) return { ok: false, reason: r.stderr.toString().trim() || `git failed (exit ${r.code})` };
      const text = r.stdout.toString('utf8');
      if (!sectionsComplete(text, nonce)) {
        const err = stderrTail(r);
        throw incomplete(`Reading git state of ${repoPath} did not complete (exit ${r.code}${err ? `: ${err}` : ''}).`, r);
      }
      const s = splitSections(text, nonce);
      return { ok: true, status: s.get('status') ?? '', diff: s.get('diff') ?? '' };
    },
  };
}
