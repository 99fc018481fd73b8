/**
 * `gpu-sessions restore RUN_DIR NODE [--map OLD=NEW]... [--include-dotfiles PATH]... [--force]
 *   [--launch [--dry-run] [--fill] [--resume-client]] [--yes] [--json]`
 * `gpu-sessions restore --from-guard s3://bucket/prefix [--s3-endpoint URL] DIR NODE …`: no local salvage; the
 *   files the node guard verified in S3 (its index there), read into DIR (empty, or an earlier such run) and restored.
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
import type { CliIo } from './cliNode';

interface RestoreCliOptions {
  runDir: string;
  /** `--from-guard s3://bucket/prefix` (with `--s3-endpoint`): runDir is the folder the run is written into. */
  fromGuard?: string;
  s3Endpoint?: string;
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

export async function cmdRestore(t: Transport, nodeName: string, o: RestoreCliOptions, io: CliIo, signal?: AbortSignal): Promise<number> {
  if ((o.dryRun || o.fill) && !o.launch)
    throw new GpuSessionsError('usage', '--dry-run and --fill apply with --launch (restore RUN_DIR NODE --launch --dry-run).');
  if (o.s3Endpoint && !o.fromGuard)
    throw new GpuSessionsError('usage', '--s3-endpoint applies with --from-guard (restore --from-guard URL DIR NODE).');
  if (o.fromGuard && o.launch)
    throw new GpuSessionsError(
      'usage',
      "--launch needs a salvage's launch profile: the guard's copy holds files only (launch NODE --profile FILE).",
    );
  const runDir = o.fromGuard ? o.runDir : resolveRunDir(o.runDir);
  if (!o.yes && io.isTTY && io.ask && !o.dryRun) {
    const what = o.fromGuard
      ? `the files the node guard verified in ${o.fromGuard} (read into ${runDir})`
      : (() => {
          const m = readRun(runDir);
          return `${m.items.filter((i) => i.status === 'verified').length} salvaged item(s) of ${m.node}`;
        })();
    const a = await io.ask(`Restore ${what} onto ${nodeName}${o.launch ? ' and relaunch its servers' : ''}? [y/N] `);
    if (!/^y(es)?$/i.test(a.trim())) {
      io.err('Nothing restored.\n');
      return 1;
    }
  }
  const r = await restoreRun(t, {
    runDir,
    ...(o.fromGuard ? { fromGuard: { s3: o.fromGuard, endpoint: o.s3Endpoint } } : {}),
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
