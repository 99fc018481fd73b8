/** Shared by the extension-host suites: the extension's API with the demo node running and probed. */
import * as vscode from 'vscode';
import type { GpuSessionsApi } from '../../src/extension/extension';
import { EXTENSION_ID, waitFor } from '../e2e/harness';

/** Activates the extension and starts the demo node unless one runs; `started`: this call started it (stop it after). */
export async function withDemoNode(): Promise<{ api: GpuSessionsApi; started: boolean }> {
  const api = await vscode.extensions.getExtension<GpuSessionsApi>(EXTENSION_ID)!.activate();
  const started = !api.demo();
  if (started) await vscode.commands.executeCommand<string>('gpuSessions.startDemoNode');
  await waitFor('the demo node probed', () => api.fleet.status('gpu-demo').state === 'ok' && api.fleet.status('gpu-demo').probe, 60_000);
  return { api, started };
}
