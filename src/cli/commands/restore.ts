/** `gpu-sessions restore RUN_DIR NODE`: carry a salvaged run to a node, then optionally launch its servers there. */
import * as path from 'node:path';
import { usageError, withNode } from '../cliNode';
import { type CliCommand, flag, list, str } from '../command';
import { EXIT, nodeExits } from '../exitCodes';
import { readyTimeoutOption, secretFilesOption } from './common';

export const restore: CliCommand = {
  name: 'restore',
  usage:
    '  gpu-sessions restore RUN_DIR NODE [--map OLD=NEW]... [--include-dotfiles PATH]... [--force] ' +
    `[--launch [--dry-run] [--fill] [--resume-client]] [--yes] [--json]
                                              carry a salvaged run to NODE: files byte-exact under their old names
                                              (old home → new home, --map for other folders), then --launch its
                                              servers on the new GPUs (exit 9: conflicts left as they are);
  gpu-sessions restore --from-guard s3://bucket/prefix [--s3-endpoint URL] DIR NODE [--map OLD=NEW]... [--force] [--yes] [--json]
                                              --from-guard: no salvage, the files the node guard verified in S3
                                              (its index there), each checked by SHA-256, read into DIR`,
  options: {
    map: { type: 'string', multiple: true },
    'from-guard': { type: 'string' },
    's3-endpoint': { type: 'string' },
    'include-dotfiles': { type: 'string', multiple: true },
    force: { type: 'boolean' },
    launch: { type: 'boolean' },
    'dry-run': { type: 'boolean' },
    fill: { type: 'boolean' },
    'resume-client': { type: 'boolean' },
    yes: { type: 'boolean', short: 'y' },
    'ready-timeout': { type: 'string' },
    secret: { type: 'string', multiple: true },
  },
  exitCodes: nodeExits({
    [EXIT.refused]: 'launch refused by preflight',
    [EXIT.notReady]: 'a launched instance did not become ready',
    [EXIT.conflicts]: 'conflicts left as they are (--force)',
  }),
  async run({ args, v, g, io }) {
    if (args.length !== 2) usageError('restore takes RUN_DIR and NODE.');
    const { parseMapOption } = await import('../../core/restore/mapping');
    const maps = list(v, 'map').map(parseMapOption);
    const readyS = readyTimeoutOption(v);
    const { cmdRestore } = await import('../cmdRestore');
    const secretFiles = await secretFilesOption(v);
    return withNode(args[1], g, io, (t, node, signal) =>
      cmdRestore(
        t,
        node.name,
        {
          runDir: path.resolve(args[0]),
          fromGuard: str(v, 'from-guard'),
          s3Endpoint: str(v, 's3-endpoint'),
          maps,
          includeDotfiles: list(v, 'include-dotfiles'),
          force: flag(v, 'force'),
          launch: flag(v, 'launch'),
          dryRun: flag(v, 'dry-run'),
          fill: flag(v, 'fill'),
          resumeClient: flag(v, 'resume-client'),
          yes: flag(v, 'yes'),
          json: g.json,
          readyTimeoutS: readyS,
          secretFiles,
        },
        io,
        signal,
      ),
    );
  },
};
