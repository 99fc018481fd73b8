/**
 * Items the salvage writes itself: running-servers.sh and each repository's git state.
 */
import { createHash } from 'node:crypto';
import * as path from 'node:path';
import { errorMessage } from '../../util/errors';
import { runOperation } from '../../remote/operation';
import { redactText } from '../../util/redact';
import { gitStateOperation } from './gitState';
import { ensureParent, insideDest } from '../dest/paths';
import { SalvageItem } from '../salvageTypes';
import { writeAtomic } from '../dest/runDir';
import { renderServersScript } from './serversScript';
import type { SalvageRun } from '../salvageRun';

export function writeServersScript(sv: SalvageRun, it: SalvageItem): void {
  const content = renderServersScript(sv.manifest.node, sv.servers);
  const abs = insideDest(sv.dir, it.localPath!);
  try {
    writeAtomic(abs, content);
    it.sha256 = createHash('sha256').update(content).digest('hex');
    it.size = Buffer.byteLength(content);
    it.status = 'verified';
    it.reason = 'generated from the running processes (flags with secrets redacted)';
    it.syncedAt = new Date().toISOString();
  } catch (e) {
    it.status = 'failed';
    it.reason = errorMessage(e);
  }
}

/** `git status` and `git diff` (staged and unstaged) of a repository, as text files. */
export async function salvageGit(sv: SalvageRun, it: SalvageItem): Promise<void> {
  try {
    const g = await runOperation(sv.o.transport, gitStateOperation(it.remotePath), sv.o.signal);
    if (!g.ok) {
      it.status = 'failed';
      it.reason = g.reason;
      return;
    }
    const { status, diff } = g;
    const dirAbs = insideDest(sv.dir, it.localPath!);
    const statusText = redactText(status ?? '');
    const diffText = sv.redact ? redactText(diff ?? '') : (diff ?? '');
    ensureParent(sv.dir, path.join(dirAbs, 'x'));
    writeAtomic(path.join(dirAbs, 'git-status.txt'), statusText);
    writeAtomic(path.join(dirAbs, 'git-diff.patch'), diffText);
    it.sha256 = createHash('sha256').update(statusText).update(diffText).digest('hex');
    it.size = Buffer.byteLength(statusText) + Buffer.byteLength(diffText);
    it.status = 'verified';
    it.reason = `git status and diff saved (${Buffer.byteLength(diffText)} B of diff)`;
  } catch (e) {
    it.status = 'failed';
    it.reason = errorMessage(e);
  }
  sv.save();
}
