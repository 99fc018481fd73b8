/**
 * gpuSessions.moveJob — "Move Job to Another Node…" (on a node, or on a salvage report SALVAGE.md): pick the salvaged
 * run and the target node, review the folder mapping, the files and the adapted launch (a plan: nothing written),
 * then restore with progress and a result notification. The same core flow as `gpu-sessions restore`.
 */
import { existsSync, readdirSync } from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { visible } from '../../core/util/terminal';
import { errorMessage } from '../../core/util/errors';
import { MANIFEST_FILE, readManifest, safeNodeName } from '../../core/flows/salvage';
import { RestoreResult, profileGroups, restoreRun } from '../../core/flows/restore';
import type { LaunchProfile } from '../../core/launch/profile';
import { renderRestore } from '../../core/flows/restoreRender';
import { cfg } from '../config';
import type { Services } from '../services';
import type { Command } from './command';
import { secretSource } from './launchProfile';
import { requireTrust } from '../trust';

const TITLE = 'Move Job to Another Node…';

/** Salvage runs of a node under the salvage folder, newest first. */
function runsOf(base: string, node: string): Array<{ dir: string; label: string; detail: string }> {
  const dir = path.join(base, safeNodeName(node));
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return [];
  }
  return names
    .filter((n) => existsSync(path.join(dir, n, MANIFEST_FILE)))
    .sort()
    .reverse()
    .map((n) => {
      let detail = '';
      try {
        const m = readManifest(path.join(dir, n));
        if (!m) return { dir: path.join(dir, n), label: n, detail: 'unreadable manifest' };
        const files = m.items.filter((i) => i.status === 'verified').length;
        const servers = m.restore?.profile ? ' · servers captured' : '';
        const client = m.restore?.client ? ' · client recorded' : '';
        detail = `${files} item(s) verified · verdict ${m.verdict ?? 'unfinished'}${servers}${client}`;
      } catch (e) {
        // damaged: the file and the field
        detail = errorMessage(e);
      }
      return { dir: path.join(dir, n), label: n, detail };
    });
}

/** Every salvaged run under the salvage folder, whatever its node (a node that is gone is the usual case). */
function allRuns(base: string): Array<{ dir: string; label: string; detail: string }> {
  let nodes: string[] = [];
  try {
    nodes = readdirSync(base);
  } catch {
    return [];
  }
  return nodes
    .flatMap((n) => runsOf(base, n).map((r) => ({ ...r, label: `${n} · ${r.label}` })))
    .sort((a, b) => (path.basename(a.dir) < path.basename(b.dir) ? 1 : -1));
}

async function pickRun(s: Services, arg: unknown): Promise<string | undefined> {
  if (arg instanceof vscode.Uri) return path.dirname(arg.fsPath);
  const ws = vscode.workspace.workspaceFolders?.[0];
  const folder = cfg<string>('salvage.folder', 'salvage');
  const base = path.isAbsolute(folder) ? folder : ws ? path.join(ws.uri.fsPath, folder) : folder;
  if (arg === undefined) {
    // From the palette: every run, the node's name in its label (its node may be gone: the very case of a move).
    const runs = allRuns(base);
    if (!runs.length) {
      void vscode.window.showErrorMessage(`GPU Sessions: no salvaged run under ${base}: salvage the node first (Salvage Node).`);
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      runs.map((r) => ({ label: visible(r.label), detail: r.detail, dir: r.dir })),
      { title: `${TITLE} — which salvaged run?`, matchOnDetail: true },
    );
    return pick?.dir;
  }
  const src = await s.resolver.resolve(arg, { title: TITLE, placeHolder: 'Which node did the job run on (its salvage)?' });
  if (!src) return undefined;
  const runs = runsOf(base, src.name);
  if (!runs.length) {
    void vscode.window.showErrorMessage(`GPU Sessions: no salvage of ${src.name} under ${base}: salvage it first (Salvage Node).`);
    return undefined;
  }
  const pick = await vscode.window.showQuickPick(
    runs.map((r) => ({ label: r.label, detail: r.detail, dir: r.dir })),
    { title: `${TITLE} — the salvaged run of ${src.name}` },
  );
  return pick?.dir;
}

/**
 * Answers given by the caller instead of the pickers (the extension-host tests, another command): the salvaged run's
 * folder, the target node, the server groups to relaunch; `planOnly` returns the review's plan and moves nothing.
 */
interface MoveJobAnswers {
  run?: string;
  target?: string;
  groups?: number[];
  fill?: boolean;
  planOnly?: boolean;
}

async function moveJobCommand(s: Services, arg?: unknown, answers: MoveJobAnswers = {}): Promise<RestoreResult | undefined> {
  // A salvage folder in the workspace could be planted by the repository: its manifest chooses files and commands.
  if (!requireTrust('Moving a job')) return undefined;
  const runDir = answers.run ?? (await pickRun(s, arg));
  if (!runDir) return undefined;
  const target = await s.resolver.resolve(answers.target, {
    title: `${TITLE} — the target node`,
    placeHolder: 'Which node receives the job?',
  });
  if (!target) return undefined;
  const t = s.transportFor(target);
  let groups: LaunchProfile[] = [];
  try {
    groups = profileGroups(readManifest(runDir)?.restore?.profile);
  } catch {
    /* restoreRun says what is wrong */
  }
  // The servers to relaunch: each captured group can be unticked, and the target's free GPUs filled.
  const chosen = !groups.length
    ? { groups: [] as number[], fill: false }
    : answers.groups
      ? { groups: answers.groups, fill: !!answers.fill }
      : await pickGroups(groups, target.name);
  if (!chosen) return undefined;
  const hasProfile = chosen.groups.length > 0;
  const planOf = (launch: boolean) =>
    vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: planning the move to ${target.name}…` },
      () => restoreRun(t, { runDir, node: target.name, planOnly: true, launch, dryRun: launch, groups: chosen.groups, fill: chosen.fill }),
    );
  let plan: RestoreResult;
  let launchProblem = '';
  try {
    plan = await planOf(hasProfile);
  } catch (e) {
    if (!hasProfile) {
      void vscode.window.showErrorMessage(`GPU Sessions: cannot plan the move to ${target.name}: ${errorMessage(e)}`);
      return undefined;
    }
    // The servers do not fit (too few free GPUs…): the files can still move; say why the launch cannot.
    launchProblem = errorMessage(e);
    try {
      plan = await planOf(false);
    } catch (e2) {
      void vscode.window.showErrorMessage(`GPU Sessions: cannot plan the move to ${target.name}: ${errorMessage(e2)}`);
      return undefined;
    }
  }
  const doc = await vscode.workspace.openTextDocument({ content: renderRestore(plan), language: 'markdown' });
  await vscode.window.showTextDocument(doc, { preview: true });
  if (answers.planOnly) return plan;
  const f = plan.files;
  const launchBtn = 'Restore and Launch';
  const filesBtn = 'Restore Files Only';
  const canLaunch = hasProfile && !launchProblem;
  const relaunch = canLaunch
    ? `\n\nThen relaunch ${plan.launch?.servers.length ?? 0} server(s) on ${target.name}'s GPUs (the script is in the review).`
    : launchProblem
      ? `\n\nThe chosen servers cannot be relaunched there: ${launchProblem}\nMove the files only, or run Move Job again and untick servers.`
      : '';
  const choice = await vscode.window.showWarningMessage(
    `Move the job to ${target.name}: ${f.toUpload ?? 0} file(s) to send, ${f.unchanged} already there, ${f.conflicts.length} conflict(s) (left as they are).`,
    {
      modal: true,
      detail: `${plan.mapped.map((m) => `${visible(m.from)} → ${visible(m.to)}`).join('\n')}${relaunch}`,
    },
    ...(canLaunch ? [launchBtn, filesBtn] : [filesBtn]),
  );
  if (!choice) return undefined;
  const launch = choice === launchBtn;
  const includeDotfiles = await pickProtected(plan);
  if (includeDotfiles === undefined) return undefined;
  try {
    const r = await vscode.window.withProgress(
      { location: vscode.ProgressLocation.Notification, title: `GPU Sessions: moving the job to ${target.name}`, cancellable: true },
      (progress, token) => {
        const ac = new AbortController();
        token.onCancellationRequested(() => ac.abort());
        return restoreRun(t, {
          runDir,
          node: target.name,
          launch,
          groups: chosen.groups,
          fill: chosen.fill,
          includeDotfiles,
          secrets: secretSource(s.context),
          signal: ac.signal,
          onProgress: (m) => progress.report({ message: m }),
        });
      },
    );
    s.log.info(renderRestore(r));
    const summary = `${r.files.uploaded} file(s) sent, ${r.files.unchanged} already there${r.launch ? `; servers ${r.launch.outcome}` : ''}`;
    if (r.exitCode === 0) {
      const resume = r.client ? 'Copy Client Command' : undefined;
      const a = await vscode.window.showInformationMessage(
        `GPU Sessions: moved the job to ${target.name}: ${summary}.`,
        ...(resume ? [resume] : []),
      );
      if (a === resume && r.client) await vscode.env.clipboard.writeText(r.client.command);
    } else
      void vscode.window.showWarningMessage(
        `GPU Sessions: move to ${target.name}: ${summary}; ${r.files.conflicts.length} conflict(s), ${r.files.failed.length} ` +
          `failed${r.launch?.refusals.length ? `; launch refused: ${r.launch.refusals[0]}` : ''} (details in the log).`,
      );
    return r;
  } catch (e) {
    void vscode.window.showErrorMessage(`GPU Sessions: the move to ${target.name} failed: ${errorMessage(e)}`);
    return undefined;
  }
}

export const moveJob: Command = {
  id: 'gpuSessions.moveJob',
  run: (s, arg?: unknown, answers?: unknown) =>
    moveJobCommand(s, arg, answers && typeof answers === 'object' ? (answers as MoveJobAnswers) : undefined),
};

/**
 * The review's choice for protected paths (dotfiles, ~/.ssh, start-up files, .git/config): none is restored
 * unless picked here (the CLI's --include-dotfiles). Undefined: cancelled.
 */
async function pickProtected(plan: RestoreResult): Promise<string[] | undefined> {
  const kept = plan.files.keptReasons;
  if (!kept.length) return [];
  const picks = await vscode.window.showQuickPick(
    kept.map((k) => ({ label: visible(k.path), description: visible(k.reason), path: k.path, picked: false })),
    {
      title: `${TITLE} — ${kept.length} protected path(s) are kept as the new node has them`,
      placeHolder: 'They run by themselves (shell start-up, ssh, git, python): pick only those you want restored, or press Enter for none',
      canPickMany: true,
      ignoreFocusOut: true,
    },
  );
  return picks?.map((p) => p.path);
}

/**
 * Which captured server groups to relaunch on the target (all ticked), and whether to fill its free GPUs. Undefined:
 * cancelled. None ticked: the files only.
 */
async function pickGroups(groups: LaunchProfile[], target: string): Promise<{ groups: number[]; fill: boolean } | undefined> {
  type Item = vscode.QuickPickItem & { index: number };
  const items: Item[] = groups.map((g, i) => ({
    label: visible(g.servedModelName ?? g.modelPath),
    description: `${Array.isArray(g.gpus) ? `${g.gpus.length} GPU(s)` : 'all GPUs'} · ${g.layout} · port ${g.basePort}`,
    picked: true,
    index: i,
  }));
  items.push({ label: `Fill ${target}'s free GPUs`, description: 'more instances of the first group', picked: false, index: -1 });
  const picks = await vscode.window.showQuickPick(items, {
    title: `${TITLE} — the servers to relaunch on ${target}`,
    placeHolder: 'Untick the servers not to relaunch (none: the files only)',
    canPickMany: true,
    ignoreFocusOut: true,
  });
  if (!picks) return undefined;
  return { groups: picks.filter((p) => p.index >= 0).map((p) => p.index), fill: picks.some((p) => p.index === -1) };
}
