/** Shared by the extension-host suites: the demo node (started, its home, its fault switch), its tree and its processes. */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../src/extension/extension';
import type { TreeNode } from '../../src/extension/tree';
import { DEMO, EXTENSION_ID, waitFor } from '../e2e/harness';
import { processRunning } from '../helpers/procs';

export { DEMO, processRunning };

/** Activates the extension and starts the demo node unless one runs; `started`: this call started it (stop it after). */
export async function withDemoNode(): Promise<{ api: GpuSessionsApi; started: boolean }> {
  const api = await vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!.activate();
  const started = !api.demo();
  if (started) await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode');
  await waitFor('the demo node probed', () => api.fleet.status(DEMO).state === 'ok' && api.fleet.status(DEMO).probe, 60_000);
  return { api, started };
}

/** The running demo node's home folder (its servers' logs, its data, its `bin/`). */
export function demoHome(api: GpuSessionsApi): string {
  return path.join(path.dirname(api.demo()!.knownHostsFile), 'home');
}

/** Runs the demo node's `sim-fault` (a failure of a real server, simulated) with `args`; returns what it printed. */
export function simFault(api: GpuSessionsApi, ...args: string[]): Buffer {
  const home = demoHome(api);
  return execFileSync(path.join(home, 'bin', 'sim-fault'), args, { env: { ...process.env, HOME: home } });
}

/** The rows under `el` (the top level when omitted), as the view would get them. */
export async function treeChildren(api: GpuSessionsApi, el?: TreeNode): Promise<TreeNode[]> {
  return ((await api.tree.getChildren(el)) ?? []) as TreeNode[];
}

/** The worker URLs the Model Gateway on `port` lists now (GET /workers, or /list_workers on a legacy build). */
export async function gatewayWorkerUrls(port: number): Promise<string[]> {
  const get = async (p: string) => {
    const r = await fetch(`http://127.0.0.1:${port}${p}`, { signal: AbortSignal.timeout(5000) });
    return { status: r.status, body: await r.text() };
  };
  let r = await get('/workers');
  if (r.status !== 200) r = await get('/list_workers');
  if (r.status !== 200) throw new Error(`gateway :${port} answered ${r.status}: ${r.body.slice(0, 200)}`);
  const j = JSON.parse(r.body) as { workers?: Array<{ url: string }>; urls?: string[] };
  return j.workers ? j.workers.map((w) => w.url) : (j.urls ?? []);
}
