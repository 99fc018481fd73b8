/**
 * The one server set the UI acts on: the servers the Nodes tree lists for a node (the probe's: this account's,
 * the demo's own folders). Pickers and capture offer exactly these (Stop Server offered another user's
 * processes on the same machine).
 */
import type { SglangServer } from '../core/sglang/serverArgv';
import type { Services } from './services';

export async function treeServers(s: Pick<Services, 'fleet'>, node: string): Promise<SglangServer[]> {
  const st = s.fleet.status(node);
  const p = st.probe ?? (await s.fleet.refresh(node)).probe;
  return p?.servers ?? [];
}
