/**
 * "GPU Sessions: Salvage Node": review (quick pick, all preselected), progress with bytes and files
 * (cancellable), then the verdict as a notification and on the node in the tree; SALVAGE.md opens.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../core/util/errors';
import type { Fleet } from '../core/node/fleet';
import type { Logger } from '../core/util/logger';
import { runOperation } from '../core/remote/operation';
import { probeOperation } from '../core/node/probe';
import type { SalvageItem, SalvageManifest } from '../core/salvage/salvage';
import type { Transport } from '../core/ssh/transport';
import { formatSize } from './tree';

export interface SalvageDeps {
  fleet: Fleet;
  transportFor(nodeName: string): Transport;
  log: Logger;
  /** Verdicts shown on the node in the tree. */
  verdicts: Map<string, { verdict: 'safe' | 'unsafe'; dest: string; at: number }>;
  onVerdict(): void;
}

function cfg<T>(key: string, def: T): T {
  return vscode.workspace.getConfiguration('gpuSessions').get<T>(key, def);
}

export async function salvageNodeCommand(
  deps: SalvageDeps,
  nodeName?: string,
  opts: { assumeYes?: boolean } = {},
): Promise<SalvageManifest | undefined> {
  const nodes = deps.fleet.nodes();
  if (!nodeName) {
    const pick = await vscode.window.showQuickPick(
      nodes.map((n) => ({ label: n.name, description: `${n.user ? n.user + '@' : ''}${n.host}:${n.port}` })),
      { title: 'Salvage Node', placeHolder: 'Which node is about to be shut down?' },
    );
    if (!pick) return undefined;
    nodeName = pick.label;
  }
  const node = deps.fleet.node(nodeName);
  if (!node) {
    void vscode.window.showErrorMessage(`GPU Sessions: unknown node ${nodeName}.`);
    return undefined;
  }
  const ws = vscode.workspace.workspaceFolders?.[0];
  if (!ws) {
    void vscode.window.showErrorMessage(
      'GPU Sessions: open a folder first — salvage writes into the workspace (gpuSessions.salvage.folder).',
    );
    return undefined;
  }
  const folderSetting = cfg<string>('salvage.folder', 'salvage');
  const base = path.isAbsolute(folderSetting) ? folderSetting : path.join(ws.uri.fsPath, folderSetting);
  const t = deps.transportFor(node.name);
  const { Salvager } = await import('../core/salvage/salvage');
  const { parseS3Url } = await import('../core/salvage/s3');
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
        deps.onVerdict();
        const report = vscode.Uri.file(path.join(m.dest, 'SALVAGE.md'));
        void openReport(report);
        if (m.verdict === 'safe') {
          void vscode.window
            .showInformationMessage(
              `GPU Sessions: ${node.name} is safe to shut down — everything selected is verified locally or in S3.`,
              'Open Report',
              'Open Source',
            )
            .then(
              (c) =>
                void (c === 'Open Report' ? openReport(report) : c === 'Open Source' ? vscode.window.showTextDocument(report) : undefined),
            );
        } else {
          void vscode.window
            .showWarningMessage(
              `GPU Sessions: ${node.name} is NOT safe to shut down — ${m.lost.length} item(s) would be lost (${m.lost
                .slice(0, 3)
                .map((l) => l.remotePath.split('/').pop())
                .join(', ')}${m.lost.length > 3 ? ', …' : ''}).`,
              'Open Report',
              'Open Source',
            )
            .then(
              (c) =>
                void (c === 'Open Report' ? openReport(report) : c === 'Open Source' ? vscode.window.showTextDocument(report) : undefined),
            );
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

/**
 * The report opens rendered (Markdown preview; its toolbar's "Open Source" shows the file), or as
 * text where the Markdown extension is disabled.
 */
export async function openReport(report: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreview', report);
  } catch {
    await vscode.window.showTextDocument(report, { preview: false }).then(undefined, () => undefined);
  }
}
