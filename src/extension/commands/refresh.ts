/** gpuSessions.refresh (re-read the node list, probe every node) and gpuSessions.refreshNode (one node). */
import type { Command } from './command';

export const refresh: Command = {
  id: 'gpuSessions.refresh',
  async run(s) {
    s.nodes.reload();
    await s.fleet.refreshAll();
  },
};

export const refreshNode: Command = {
  id: 'gpuSessions.refreshNode',
  async run(s, el?: unknown) {
    const node = await s.resolver.resolve(el, { title: 'Refresh Node' });
    if (node) await s.fleet.refresh(node.name);
  },
};
