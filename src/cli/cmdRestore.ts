/**
 * `gpu-sessions restore RUN_DIR NODE [--map OLD=NEW]... [--include-dotfiles PATH]... [--force]
 *   [--launch [--dry-run] [--fill] [--resume-client]] [--yes] [--json]`
 *
 * Carries a salvaged run to NODE: every verified file byte-exact under its old name (mapped), with its mode;
 * git diffs applied; then, with --launch, the servers salvage captured, on the new node's GPUs.
 * Exit codes: 0 ok, 9 conflicts left as they are (without --force), 6 launch refused by preflight,
 * 7 a server did not become ready, 1 files failed, 2 usage.
 */
import type { Transport } from '../core/ssh/transport';
import { readRun, resolveRunDir, restoreRun } from '../core/flows/restore';
import { renderRestore, restoreJson } from '../core/flows/restoreRender';

import type { FolderMap } from '../core/restore/mapping';
import { GpuSessionsError } from '../core/util/errors';
import { cliSecretSource } from './cmdLaunch';

interface RestoreCliOptions {
  runDir: string;
  maps: FolderMap[];
  /** Protected paths on the new node the user restores anyway (`--include-dotfiles PATH`, repeatable or comma-separated). */
  includeDotfiles?: string[];
  force: boolean;
  launch: boolean;
  dryRun: boolean;
  fill: boolean;
  resumeClient: boolean;
  yes: boolean;
  json: boolean;
  readyTimeoutS?: number;
  secretFiles?: Record<string, string>;
}

interface RestoreIo {
  out(s: string): void;
  err(s: string): void;
  isTTY: boolean;
  ask?: (q: string) => Promise<string>;
}

export async function cmdRestore(
  t: Transport,
  nodeName: string,
  o: RestoreCliOptions,
  io: RestoreIo,
  signal?: AbortSignal,
): Promise<number> {
  if ((o.dryRun || o.fill) && !o.launch)
    throw new GpuSessionsError('usage', '--dry-run and --fill apply with --launch (restore RUN_DIR NODE --launch --dry-run).');
  const runDir = resolveRunDir(o.runDir);
  const m = readRun(runDir);
  if (!o.yes && io.isTTY && io.ask && !o.dryRun) {
    const n = m.items.filter((i) => i.status === 'verified').length;
    const a = await io.ask(
      `Restore ${n} salvaged item(s) of ${m.node} onto ${nodeName}${o.launch ? ' and relaunch its servers' : ''}? [y/N] `,
    );
    if (!/^y(es)?$/i.test(a.trim())) {
      io.err('Nothing restored.\n');
      return 1;
    }
  }
  const r = await restoreRun(t, {
    runDir,
    node: nodeName,
    maps: o.maps,
    includeDotfiles: o.includeDotfiles,
    force: o.force,
    launch: o.launch,
    dryRun: o.dryRun,
    fill: o.fill,
    resumeClient: o.resumeClient,
    readyTimeoutMs: o.readyTimeoutS ? o.readyTimeoutS * 1000 : undefined,
    secrets: cliSecretSource(o.secretFiles),
    signal,
    onProgress: o.json ? undefined : (msg) => io.err(msg + '\n'),
  });
  if (o.json) io.out(JSON.stringify(restoreJson(r), null, 2) + '\n');
  else io.out(renderRestore(r));
  return r.exitCode;
}
