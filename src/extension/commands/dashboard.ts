/** gpuSessions.openDashboard — the Node Dashboard; gpuSessions.setRentalDeadline — the rental's end time. */
import * as vscode from 'vscode';
import type { Command } from './command';

export const openDashboard: Command = {
  id: 'gpuSessions.openDashboard',
  run: async (s, arg?: unknown) => {
    const node = await s.resolver.resolve(arg, { title: 'Node Dashboard' });
    if (!node) return undefined;
    return s.dashboards.open(node.name);
  },
};

export const setRentalDeadline: Command = {
  id: 'gpuSessions.setRentalDeadline',
  run: async (s, arg?: unknown, value?: string) => {
    const node = await s.resolver.resolve(arg, { title: 'Set Rental Deadline' });
    if (!node) return;
    const conf = vscode.workspace.getConfiguration('gpuSessions');
    const cur = { ...(conf.get<Record<string, string>>('rentalDeadlines') ?? {}) };
    const v =
      value ??
      (await vscode.window.showInputBox({
        title: `Rental deadline of ${node.name}`,
        prompt: 'When the rental ends, ISO 8601 (e.g. 2026-12-02T06:00:00Z); empty to clear',
        value: cur[node.name] ?? '',
        validateInput: (x) =>
          !x.trim() || (/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(x.trim()) && !Number.isNaN(Date.parse(x.trim())))
            ? undefined
            : 'An ISO 8601 time such as 2026-12-02T06:00:00Z',
      }));
    if (v === undefined) return;
    if (v.trim()) cur[node.name] = new Date(v.trim()).toISOString();
    else delete cur[node.name];
    await conf.update('rentalDeadlines', cur, vscode.ConfigurationTarget.Global);
  },
};
