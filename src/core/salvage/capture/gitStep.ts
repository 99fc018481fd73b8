/**
 * Items the salvage writes itself: running-servers.sh and each repository's git state. Each returns the item's
 * patch (applied by the orchestrator).
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
import type { SglangServer } from '../../sglang/serverArgv';
import type { ItemPatch, PhaseEnv } from '../phase';

/** running-servers.sh: the command lines of `servers`, written into the run folder `dir`. */
export function writeServersScript(dir: string, node: string, servers: readonly SglangServer[], it: SalvageItem): ItemPatch {
  const content = renderServersScript(node, servers);
  const abs = insideDest(dir, it.localPath!);
  try {
    writeAtomic(abs, content);
    return {
      sha256: createHash('sha256').update(content).digest('hex'),
      size: Buffer.byteLength(content),
      status: 'verified',
      reason: 'generated from the running processes (flags with secrets redacted)',
      syncedAt: new Date().toISOString(),
    };
  } catch (e) {
    return { status: 'failed', reason: errorMessage(e) };
  }
}

/** `git status` and `git diff` (staged and unstaged) of a repository, as text files. */
export async function salvageGit(env: PhaseEnv, it: SalvageItem): Promise<ItemPatch> {
  try {
    const g = await runOperation(env.o.transport, gitStateOperation(it.remotePath), env.o.signal);
    if (!g.ok) return { status: 'failed', reason: g.reason };
    const { status, diff } = g;
    const dirAbs = insideDest(env.dir, it.localPath!);
    const statusText = redactText(status ?? '');
    const diffText = env.o.redact ? redactText(diff ?? '') : (diff ?? '');
    ensureParent(env.dir, path.join(dirAbs, 'x'));
    writeAtomic(path.join(dirAbs, 'git-status.txt'), statusText);
    writeAtomic(path.join(dirAbs, 'git-diff.patch'), diffText);
    return {
      sha256: createHash('sha256').update(statusText).update(diffText).digest('hex'),
      size: Buffer.byteLength(statusText) + Buffer.byteLength(diffText),
      status: 'verified',
      reason: `git status and diff saved (${Buffer.byteLength(diffText)} B of diff)`,
    };
  } catch (e) {
    return { status: 'failed', reason: errorMessage(e) };
  }
}
