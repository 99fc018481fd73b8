/**
 * gpuSessions.salvageNode — "Salvage Node": review (quick pick, all preselected), progress with bytes and files
 * (cancellable), then the verdict as a notification and on the node in the tree; SALVAGE.md opens.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../../core/util/errors';
import { formatBytes as formatSize } from '../../core/util/format';
import { runOperation } from '../../core/remote/operation';
import { probeOperation } from '../../core/node/probe';
import type { SalvageItem, SalvageManifest } from '../../core/salvage/salvage';
import { cfg } from '../config';
import type { Services } from '../services';
import type { Command } from './command';

/** The argument: a node element or a node name; `opts.assumeYes` skips the review (tests). */
export const salvageNode: Command = {
  id: 'gpuSessions.salvageNode',
  run: (s, el?: unknown, opts?: { assumeYes?: boolean }) => salvageNodeCommand(s, el, opts),
};

async function salvageNodeCommand(deps: Services, arg: unknown, opts: { assumeYes?: boolean } = {}): Promise<SalvageManifest | undefined> {
  const node = await deps.resolver.resolve(arg, {
    title: 'Salvage Node',
    placeHolder: 'Which node is about to be shut down?',
    nodeElementOnly: true,
  });
  if (!node) return undefined;
  const ws = vscode.workspace.workspaceFolders?.[0];
  if (!ws) {
    void vscode.window.showErrorMessage(
      'GPU Sessions: open a folder first — salvage writes into the workspace (gpuSessions.salvage.folder).',
    );
    return undefined;
  }
  const folderSetting = cfg<string>('salvage.folder', 'salvage');
  const base = path.isAbsolute(folderSetting) ? folderSetting : path.join(ws.uri.fsPath, folderSetting);
  const t = deps.transportFor(node);
  const { Salvager } = await import('../../core/salvage/salvage');
  const { parseS3Url } = await import('../../core/salvage/s3');
  const s3Url = cfg<string>('salvage.s3Url', '');
  const s3u = s3Url ? parseS3Url(s3Url) : undefined;
  if (s3Url && !s3u)
    void vscode.window.showWarningMessage(`GPU Sessions: gpuSessions.salvage.s3Url "${s3Url}" is not s3://bucket/prefix; S3 is skipped.`);
  const endpoint = cfg<string>('salvage.s3Endpoint', '') || undefined;

  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Salvaging ${node.name}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      let last = 0;
      try {
        progress.report({ message: 'probing…' });
        const probe =
          deps.fleet.status(node.name).probe ?? (await runOperation(t, probeOperation(node.name, { roots: node.roots }), ac.signal));
        const salvager = new Salvager({
          node: node.name,
          transport: t,
          base,
          roots: node.roots,
          servers: probe.servers,
          sizeThreshold: cfg<number>('salvage.sizeThresholdMiB', 256) * 1048576,
          s3: s3u ? { ...s3u, endpoint, forcePathStyle: endpoint ? true : undefined, mappings: cfg('salvage.s3Mappings', []) } : null,
          signal: ac.signal,
          log: deps.log,
          onProgress: (p) => {
            const pct = p.bytesTotal > 0 ? (p.bytesDone / p.bytesTotal) * 100 : 0;
            progress.report({
              message: `${p.message} — ${p.filesDone}/${p.filesTotal} files, ${formatSize(p.bytesDone)} / ${formatSize(p.bytesTotal)}`,
              increment: Math.max(0, pct - last),
            });
            last = Math.max(last, pct);
          },
        });
        progress.report({ message: 'listing files on the node…' });
        const items = await salvager.plan();
        let chosen: string[] | undefined;
        if (!opts.assumeYes) {
          const reviewable = items.filter((i) => i.kind !== 'symlink' && i.localPath);
          const picks = reviewable.map((i: SalvageItem) => ({
            label: i.remotePath.split('/').pop() ?? i.remotePath,
            description: `${formatSize(i.size)} · ${i.kind}`,
            detail: i.remotePath + (i.reason && !i.selected ? ` — ${i.reason}` : ''),
            picked: i.selected,
            item: i,
          }));
          const sel = await vscode.window.showQuickPick(picks, {
            canPickMany: true,
            title: `Salvage ${node.name}: review (${picks.filter((p) => p.picked).length} selected)`,
            placeHolder: 'Everything of value is selected; large files and model weights are listed but not selected',
            matchOnDetail: true,
            ignoreFocusOut: true,
          });
          if (!sel) return undefined;
          chosen = [...sel.map((s) => s.item.remotePath), ...items.filter((i) => i.kind === 'server-cmdline').map((i) => i.remotePath)];
        }
        const m = await salvager.execute(chosen);
        deps.verdicts.set(node.name, { verdict: m.verdict ?? 'unsafe', dest: m.dest, at: Date.now() });
        const report = vscode.Uri.file(path.join(m.dest, 'SALVAGE.md'));
        void vscode.window.showTextDocument(report, { preview: false }).then(undefined, () => undefined);
        if (m.verdict === 'safe') {
          void vscode.window
            .showInformationMessage(
              `GPU Sessions: ${node.name} is safe to shut down — everything selected is verified locally or in S3.`,
              'Open Report',
            )
            .then((c) => c && vscode.window.showTextDocument(report));
        } else {
          void vscode.window
            .showWarningMessage(
              `GPU Sessions: ${node.name} is NOT safe to shut down — ${m.lost.length} item(s) would be lost (${m.lost
                .slice(0, 3)
                .map((l) => l.remotePath.split('/').pop())
                .join(', ')}${m.lost.length > 3 ? ', …' : ''}).`,
              'Open Report',
            )
            .then((c) => c && vscode.window.showTextDocument(report));
        }
        return m;
      } catch (e) {
        deps.log.error(`Salvage of ${node.name} failed: ${errorMessage(e)}`);
        void vscode.window
          .showErrorMessage(`GPU Sessions: salvage of ${node.name} failed: ${errorMessage(e)}`, 'Show Log')
          .then((c) => c && vscode.commands.executeCommand('gpuSessions.showLog'));
        return undefined;
      }
    },
  );
}
