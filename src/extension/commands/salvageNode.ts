/**
 * gpuSessions.salvageNode — "Salvage Node": review (quick pick grouped by folder with why each folder was
 * chosen; everything of value preselected, left items visible with their reason, secret stores and caches
 * shown but not selectable; a button to stop the servers first), progress with bytes and files
 * (cancellable), then the verdict as a notification naming the first reason when unsafe, and on the node.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { errorMessage } from '../../core/util/errors';
import { formatBytes as formatSize } from '../../core/util/format';
import { runOperation } from '../../core/remote/operation';
import { probeOperation } from '../../core/node/probe';
import type { SalvageItem, SalvageManifest, SalvageOptions, WriterInfo } from '../../core/flows/salvage';
import type { NodeSpec } from '../../core/ssh/config';
import type { RootInfo } from '../../core/salvage/plan/listing';
import { cfg } from '../config';
import { requireTrust } from '../trust';
import type { Services } from '../services';
import type { Command } from './command';

type SalvageOpts = { assumeYes?: boolean; stopServers?: boolean; stopWriters?: boolean; drain?: boolean };

/** The argument: a node element or a node name; `opts.assumeYes` skips the review, `stopServers` etc. as the CLI (tests). */
export const salvageNode: Command = {
  id: 'gpuSessions.salvageNode',
  run: (s, el?: unknown, opts?: SalvageOpts) => salvageNodeCommand(s, el, opts),
};

async function salvageNodeCommand(deps: Services, arg: unknown, opts: SalvageOpts = {}): Promise<SalvageManifest | undefined> {
  const node = await deps.resolver.resolve(arg, {
    title: 'Salvage Node',
    placeHolder: 'Which node is about to be shut down?',
    nodeElementOnly: true,
  });
  if (!node) return undefined;
  // Stopping servers or writers runs kill on the node: refused in an untrusted workspace (as Stop Server is).
  if ((opts.stopServers || opts.stopWriters || opts.drain) && !requireTrust('Stopping servers')) return undefined;
  const settings = await salvageSettings(deps, node);
  if (!settings) return undefined;
  const t = settings.transport;
  const { Salvager } = await import('../../core/flows/salvage');

  return vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: `Salvaging ${node.name}`, cancellable: true },
    async (progress, token) => {
      const ac = new AbortController();
      token.onCancellationRequested(() => ac.abort());
      let last = 0;
      const stop = { servers: !!opts.stopServers, writers: !!opts.stopWriters, drain: !!opts.drain };
      try {
        progress.report({ message: 'probing…' });
        const probe =
          deps.fleet.status(node.name).probe ?? (await runOperation(t, probeOperation(node.name, { roots: node.roots }), ac.signal));
        const salvager = new Salvager({
          ...settings,
          // Read when the salvage reaches its final pass: the review's stop button can still turn them on.
          get stopServers() {
            // the servers this salvage stops end by the user's choice: not crash alerts
            if (stop.servers) for (const sv of probe.servers) deps.live.stopped.mark(node.name, sv.port, Date.now(), sv.pid);
            return stop.servers;
          },
          get stopWriters() {
            return stop.writers;
          },
          get drain() {
            return stop.drain;
          },
          confirmStopWriters: opts.assumeYes ? undefined : confirmStopWriters,
          servers: probe.servers,
          signal: ac.signal,
          // the review panel: the paths chosen, or null (closed) to download nothing
          review: opts.assumeYes
            ? undefined
            : async (items, manifest) => {
                const chosen = await review(node.name, items, manifest.roots, manifest.writers, stop);
                return chosen ? await choiceForUniqueWeights(items, chosen) : null;
              },
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
        const m = await salvager.run();
        if (!m) return undefined;
        showSalvageVerdict(deps, node.name, m);
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
 * The end of a salvage, as Salvage Node shows it (Release Node too): the verdict on the node's row, a fresh probe, the
 * report opened, and a notification — "safe to shut down", or "NOT safe" naming the first reason and the items at risk.
 */
export function showSalvageVerdict(deps: Services, node: string, m: SalvageManifest): void {
  deps.verdicts.set(node, { verdict: m.verdict ?? 'unsafe', dest: m.dest, at: Date.now() });
  // the node as the verdict found it: the next probe stamps the verdict (verdictFreshness.ts)
  void deps.fleet.refresh(node).catch(() => undefined);
  const report = vscode.Uri.file(path.join(m.dest, 'SALVAGE.md'));
  void openReport(report);
  if (m.verdict === 'safe') {
    // the last step of the seeds' flow: end the rental, where the node can
    const canEnd = (deps.fleet.status(node).probe?.provider?.actions.length ?? 0) > 0;
    void vscode.window
      .showInformationMessage(
        `GPU Sessions: ${node} is safe to shut down — everything selected is verified locally or in S3.`,
        'Open Report',
        'Open Source',
        ...(canEnd ? ['End Rental…'] : []),
      )
      .then(
        (c) =>
          void (c === 'Open Report'
            ? openReport(report)
            : c === 'Open Source'
              ? vscode.window.showTextDocument(report)
              : c === 'End Rental…'
                ? vscode.commands.executeCommand('gpuSessions.endRental', node)
                : undefined),
      );
  } else {
    const first = m.reasonDetails[0];
    const why = first ? `${first.code}: ${first.message}` : `${m.lost.length} item(s) would be lost`;
    const atRisk = m.lost
      .slice(0, 3)
      .map((l) => l.remotePath.split('/').pop())
      .join(', ');
    const lost = m.lost.length ? ` (${m.lost.length} item(s) at risk: ${atRisk}${m.lost.length > 3 ? ', …' : ''})` : '';
    void vscode.window
      .showWarningMessage(`GPU Sessions: ${node} is NOT safe to shut down — ${why}${lost}.`, 'Open Report', 'Open Source')
      .then(
        (c) => void (c === 'Open Report' ? openReport(report) : c === 'Open Source' ? vscode.window.showTextDocument(report) : undefined),
      );
  }
}

/**
 * What every salvage of a node reads from the settings (folder, roots, redaction, S3): one place for
 * Salvage Node and Keep Node Salvaged. Undefined (after telling the user) when no folder is open.
 */
export async function salvageSettings(
  deps: Services,
  node: NodeSpec,
): Promise<
  | Pick<
      SalvageOptions,
      'node' | 'transport' | 'base' | 'roots' | 'addRoots' | 'redact' | 'gitignore' | 'sizeThreshold' | 's3' | 'log' | 'deadline'
    >
  | undefined
> {
  const ws = vscode.workspace.workspaceFolders?.[0];
  if (!ws) {
    void vscode.window.showErrorMessage(
      'GPU Sessions: open a folder first — salvage writes into the workspace (gpuSessions.salvage.folder).',
    );
    return undefined;
  }
  const folderSetting = cfg<string>('salvage.folder', 'salvage');
  const { parseS3Url } = await import('../../core/salvage/s3/s3');
  const s3Url = cfg<string>('salvage.s3Url', '');
  const s3u = s3Url ? parseS3Url(s3Url) : undefined;
  if (s3Url && !s3u)
    void vscode.window.showWarningMessage(`GPU Sessions: gpuSessions.salvage.s3Url "${s3Url}" is not s3://bucket/prefix; S3 is skipped.`);
  const endpoint = cfg<string>('salvage.s3Endpoint', '') || undefined;
  // The node's rental deadline (Set Rental Deadline…): most valuable per byte first, what will not make it named.
  const deadlineSetting = (cfg<Record<string, string>>('rentalDeadlines', {}) ?? {})[node.name];
  const deadline = deadlineSetting ? new Date(deadlineSetting) : null;
  return {
    node: node.name,
    transport: deps.transportFor(node),
    base: path.isAbsolute(folderSetting) ? folderSetting : path.join(ws.uri.fsPath, folderSetting),
    roots: node.roots,
    addRoots: cfg<string[]>('salvage.addRoots', []),
    redact: cfg<boolean>('salvage.redact', false),
    gitignore: cfg<boolean>('salvage.gitignore', true),
    sizeThreshold: cfg<number>('salvage.sizeThresholdMiB', 256) * 1048576,
    s3: s3u ? { ...s3u, endpoint, forcePathStyle: endpoint ? true : undefined, mappings: cfg('salvage.s3Mappings', []) } : null,
    log: deps.log,
    deadline: deadline && !Number.isNaN(deadline.getTime()) ? deadline : null,
  };
}

type ReviewPick = vscode.QuickPickItem & { item?: SalvageItem };

const LEFT_LABEL: Record<string, string> = {
  large: 'above the size threshold',
  'redownloadable-weights': 're-downloadable weights',
  'on-the-hub': 'on the Hugging Face Hub',
  'in-s3': 'in S3',
  'origin-unknown': 'weights of UNKNOWN origin',
  deselected: 'not selected',
};

/** The review: items grouped by folder (with why), left items visible, a button to stop servers first. */
async function review(
  node: string,
  items: SalvageItem[],
  roots: RootInfo[],
  writers: WriterInfo[],
  stop: { servers: boolean; writers: boolean; drain: boolean },
): Promise<string[] | undefined> {
  const rootOf = (p: string) =>
    roots
      .filter((r) => p === r.path || p.startsWith(r.path.endsWith('/') ? r.path : r.path + '/'))
      .sort((a, b) => b.path.length - a.path.length)[0]?.path ?? '(other)';
  const groups = new Map<string, SalvageItem[]>();
  for (const i of items) {
    if (i.kind === 'symlink' || i.kind === 'server-cmdline') continue;
    const k = rootOf(i.remotePath);
    groups.set(k, [...(groups.get(k) ?? []), i]);
  }
  const picks: ReviewPick[] = [];
  for (const r of [...roots.map((x) => x.path), '(other)']) {
    const list = groups.get(r);
    if (!list?.length) continue;
    const why = roots.find((x) => x.path === r)?.why ?? '';
    picks.push({ label: `${r} — ${why}`, kind: vscode.QuickPickItemKind.Separator });
    for (const i of list) {
      const rel = i.remotePath.startsWith(r + '/') ? i.remotePath.slice(r.length + 1) : i.remotePath;
      if (i.leftReason === 'secret-store' || i.kind === 'cache') {
        // Shown, never selectable: a separator cannot be picked.
        picks.push({
          label:
            i.kind === 'cache'
              ? `cache: ${rel} (${i.files ?? 0} files, ${formatSize(i.size)}) — not copied`
              : `🔒 ${rel} — private key or credentials: never copied`,
          kind: vscode.QuickPickItemKind.Separator,
        });
        continue;
      }
      const left = i.leftReason ? ` · left: ${LEFT_LABEL[i.leftReason] ?? i.leftReason}` : '';
      const jobWeights = i.jobWeights && !i.selected ? ' · written by the job, NOT re-downloadable' : '';
      picks.push({
        label: rel,
        description: `${formatSize(i.size)} · ${i.kind}${left}${jobWeights}`,
        detail: i.reason && !i.selected ? i.reason : undefined,
        picked: i.selected,
        item: i,
      });
    }
  }
  const qp = vscode.window.createQuickPick<ReviewPick>();
  qp.canSelectMany = true;
  qp.ignoreFocusOut = true;
  qp.matchOnDescription = true;
  qp.items = picks;
  qp.selectedItems = picks.filter((p) => p.picked);
  const serverCount = writers.filter((w) => w.server).length;
  const others = writers.length - serverCount;
  const stopButton: vscode.QuickInputButton = {
    iconPath: new vscode.ThemeIcon('debug-stop'),
    tooltip: 'Stop the SGLang servers (and the other writers, after asking) first, then a final pass — needed for "safe"',
  };
  const setTitle = () => {
    const n = qp.selectedItems.length;
    qp.title = `Salvage ${node}: review (${n} selected)${stop.servers ? ' · servers will be stopped' : ''}`;
    const otherWriters = others ? `, ${others} other writer(s)` : '';
    qp.placeholder =
      writers.length && !stop.servers
        ? `Still running: ${serverCount} SGLang server(s)${otherWriters} — the verdict cannot be safe until they stop (button ⏹)`
        : 'Everything of value is selected; left items show why they stay on the node';
  };
  if (writers.length) qp.buttons = [stopButton];
  setTitle();
  return new Promise<string[] | undefined>((resolve) => {
    let done = false;
    qp.onDidChangeSelection(() => setTitle());
    qp.onDidTriggerButton((b) => {
      if (b !== stopButton) return;
      if (!stop.servers && !requireTrust('Stopping servers')) return;
      stop.servers = !stop.servers;
      stop.writers = stop.servers && others > 0;
      setTitle();
    });
    qp.onDidAccept(() => {
      done = true;
      const sel = qp.selectedItems.filter((p) => p.item).map((p) => p.item!.remotePath);
      qp.hide();
      resolve([...sel, ...items.filter((i) => i.kind === 'server-cmdline' || i.kind === 'symlink').map((i) => i.remotePath)]);
    });
    qp.onDidHide(() => {
      qp.dispose();
      if (!done) resolve(undefined);
    });
    qp.show();
  });
}

/**
 * Weights of unknown origin the review leaves on the node: salvage them, or accept leaving them (`--leave`);
 * closing the question leaves them unaccepted (the verdict then says unsafe / unique-weights).
 */
async function choiceForUniqueWeights(items: SalvageItem[], chosen: string[]): Promise<string[]> {
  const sel = new Set(chosen);
  const left = items.filter((i) => i.leftReason === 'origin-unknown' && !sel.has(i.remotePath) && !i.leaveAccepted);
  if (!left.length) return chosen;
  const bytes = left.reduce((a, b) => a + b.size, 0);
  const folders = [...new Set(left.map((i) => i.remotePath.slice(0, i.remotePath.lastIndexOf('/'))))];
  const a = await vscode.window.showWarningMessage(
    `${left.length} weight file(s) (${formatSize(bytes)}) of unknown origin would stay on the node: nothing shows they exist anywhere else.`,
    { modal: true, detail: folders.slice(0, 10).join('\n') },
    'Salvage Them',
    'Leave Them',
  );
  if (a === 'Salvage Them') return [...chosen, ...left.map((i) => i.remotePath)];
  if (a === 'Leave Them') for (const i of left) i.leaveAccepted = true;
  return chosen;
}

/** VS Code asks before other processes are stopped, naming each. */
async function confirmStopWriters(writers: WriterInfo[]): Promise<boolean> {
  const list = writers
    .map((w) => `pid ${w.pid}: ${w.command.slice(0, 120)}${w.writes.length ? ` (writes ${w.writes[0]})` : ''}`)
    .join('\n');
  const a = await vscode.window.showWarningMessage(
    `Stop ${writers.length} other process(es) that still write under the salvaged folders?`,
    { modal: true, detail: list },
    'Stop Them',
  );
  return a === 'Stop Them';
}

/**
 * The report opens rendered (Markdown preview; its toolbar's "Open Source" shows the file), or as
 * text where the Markdown extension is disabled.
 */
export async function openReport(report: vscode.Uri): Promise<void> {
  try {
    await vscode.commands.executeCommand('markdown.showPreview', report);
    // A preview already open keeps its old text until refreshed (Open Report showed an older SALVAGE.md).
    await vscode.commands.executeCommand('markdown.preview.refresh').then(undefined, () => undefined);
  } catch {
    await vscode.window.showTextDocument(report, { preview: false }).then(undefined, () => undefined);
  }
}
