/** `gpu-sessions salvage NODE --dest DIR`: every file of value saved or listed with why it stays; the verdict. */
import * as path from 'node:path';
import { usageError, withNode } from '../cliNode';
import { type CliCommand, type OptionValues, flag, list, num, str } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { deadlineOption } from './common';

export const salvage: CliCommand = {
  name: 'salvage',
  usage: `  gpu-sessions salvage NODE --dest DIR [--roots A,B] [--add-root DIR] [--stop-servers] [--drain] [--stop-writers]
                        [--redact] [--no-gitignore] [--include-large] [--size-threshold MiB] [--leave PATH]
                        [--s3 s3://bucket/prefix] [--s3-endpoint URL] [--max-files N] [--max-depth N]
                        [--watch [--interval S] [--grace S]]
                        [--upload-missing [--part-size MiB]] [--deadline ISO] [--download-guarded] [--yes] [--json]
                                              every file under the work's folders saved byte-exact or listed with
                                              why it stays; check S3; environment; whether NODE is safe to shut
                                              down (exit 5 unsafe: still-running, changed-during-run, ...);
                                              --leave PATH accepts leaving weights of unknown origin (repeatable);
                                              files the node's guard verified in S3 count as saved
                                              (--download-guarded downloads them too)`,
  options: {
    dest: { type: 'string' },
    'add-root': { type: 'string', multiple: true },
    'stop-servers': { type: 'boolean' },
    drain: { type: 'boolean' },
    'stop-writers': { type: 'boolean' },
    redact: { type: 'boolean' },
    'no-gitignore': { type: 'boolean' },
    'include-large': { type: 'boolean' },
    'size-threshold': { type: 'string' },
    leave: { type: 'string', multiple: true },
    'keep-secrets': { type: 'boolean' },
    s3: { type: 'string' },
    's3-endpoint': { type: 'string' },
    'max-files': { type: 'string' },
    'max-depth': { type: 'string' },
    watch: { type: 'boolean' },
    interval: { type: 'string' },
    grace: { type: 'string' },
    'upload-missing': { type: 'boolean' },
    'part-size': { type: 'string' },
    deadline: { type: 'string' },
    'download-guarded': { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
  },
  exitCodes: nodeExits({ [EXIT.unsafe]: 'salvage verdict unsafe' }),
  async run({ args, v, g, io }) {
    if (args.length !== 1) usageError('salvage takes exactly one NODE.');
    if (!str(v, 'dest')) usageError('salvage needs --dest DIR (the salvage goes to DIR/<node>/<timestamp>/).');
    const n = salvageNumbers(v);
    const addRoots = list(v, 'add-root')
      .flatMap((r) => r.split(','))
      .filter(Boolean);
    for (const r of addRoots)
      if (!r.startsWith('/') && r !== '~' && !r.startsWith('~/'))
        usageError(`--add-root takes an absolute folder on the node (or ~/…), not "${r}".`);
    const leave = list(v, 'leave').filter(Boolean);
    for (const r of leave) if (!r.startsWith('/')) usageError(`--leave takes an absolute path on the node, not "${r}".`);
    const { cmdSalvage } = await import('../cmdSalvage');
    return withNode(args[0], g, io, (t, node, signal) =>
      cmdSalvage(
        t,
        node.name,
        {
          dest: path.resolve(str(v, 'dest')!),
          s3: str(v, 's3'),
          s3Endpoint: str(v, 's3-endpoint'),
          yes: flag(v, 'yes'),
          json: g.json,
          includeLarge: flag(v, 'include-large'),
          leave,
          sizeThreshold: n.thr ? n.thr * 1048576 : undefined,
          roots: g.roots,
          addRoots,
          redact: flag(v, 'redact'),
          gitignore: !v['no-gitignore'],
          stopServers: flag(v, 'stop-servers'),
          drain: flag(v, 'drain'),
          stopWriters: flag(v, 'stop-writers'),
          maxFiles: n.maxFiles,
          maxDepth: n.maxDepth,
          watch: flag(v, 'watch'),
          uploadMissing: flag(v, 'upload-missing'),
          downloadGuarded: flag(v, 'download-guarded'),
          partSizeMiB: n.partSizeMiB,
          intervalS: n.wInterval,
          graceS: n.graceS,
          deadline: deadlineOption(v),
          verbose: g.verbose,
        },
        io,
        signal,
      ),
    );
  },
};

/** The numeric options and the ones that only go with another, checked in the order they always were. */
function salvageNumbers(v: OptionValues) {
  const thr = num(v, 'size-threshold');
  if (thr !== undefined && !(thr > 0)) usageError('--size-threshold is a positive number of MiB.');
  const maxFiles = num(v, 'max-files');
  if (maxFiles !== undefined && !(Number.isInteger(maxFiles) && maxFiles > 0)) usageError('--max-files is a positive whole number.');
  const maxDepth = num(v, 'max-depth');
  if (maxDepth !== undefined && !(Number.isInteger(maxDepth) && maxDepth > 0 && maxDepth <= 32))
    usageError('--max-depth is a whole number from 1 to 32.');
  if (v.drain && !v['stop-servers']) usageError('--drain only applies with --stop-servers (drain the servers, then stop them).');
  const wInterval = num(v, 'interval');
  if (wInterval !== undefined && !(wInterval >= 0.5 && wInterval <= 86_400))
    usageError('--interval is a number of seconds from 0.5 to 86400.');
  if (wInterval !== undefined && !v.watch) usageError('--interval only applies with --watch.');
  const partSizeMiB = num(v, 'part-size');
  if (partSizeMiB !== undefined && !(partSizeMiB >= 5 && partSizeMiB <= 5120)) usageError('--part-size is a number of MiB from 5 to 5120.');
  const graceS = num(v, 'grace');
  if (graceS !== undefined && !(graceS > 0)) usageError('--grace is a positive number of seconds.');
  return { thr, maxFiles, maxDepth, wInterval, partSizeMiB, graceS };
}
