/**
 * Which files of a node an agent may read (MCP tail_log / parse_log): the server logs and artifacts the probe
 * found, or files under the salvage roots (the probe's roots, the servers' working and log folders, --roots)
 * — never a secret store (private keys, credentials), never a path with `.` or `..` components. The node
 * reports the file's real path (readlink -f) and that is checked again, so a link cannot lead out.
 */
import { insideRoots, isSecretStore } from '../salvage/plan/listing';

interface NodeReadScope {
  /** Exact files: server logs, artifacts. */
  files: string[];
  /** Folders whose files may be read. */
  roots: string[];
}

/** Why `p` may not be read, or null when it may. */
export function nodeReadRefusal(p: string, scope: NodeReadScope): string | null {
  if (!p.startsWith('/')) return `${JSON.stringify(p)} is not an absolute path on the node`;
  const parts = p.split('/').slice(1);
  if (parts.some((c) => c === '..' || c === '.')) return `${JSON.stringify(p)} has a "." or ".." component; give the plain path`;
  if (/[\x00-\x1f\x7f]/.test(p)) return 'the path holds a control character';
  if (isSecretStore(p)) return `${JSON.stringify(p)} is a private key or credentials store: never read`;
  const norm = p.replace(/\/+/g, '/').replace(/(.)\/$/, '$1');
  if (scope.files.includes(norm)) return null;
  const roots = scope.roots.filter((r) => r.startsWith('/') && r !== '/').map((r) => r.replace(/\/+$/, ''));
  if (insideRoots(norm, roots)) return null;
  return (
    `${JSON.stringify(p)} is neither a log or artifact the probe found on this node nor under its salvage roots ` +
    `(${roots.slice(0, 6).join(', ') || 'none'}); call probe_node to see the logs and artifacts`
  );
}

/**
 * Node text shown in a VS Code notification, as plain text: notifications render markdown links
 * (`[x](https://…)`, `[x](command:…)`), so the brackets and parentheses become fullwidth look-alikes.
 */
export function plainNotificationText(s: string): string {
  return s.replace(/[[\]()]/g, (c) => ({ '[': '［', ']': '］', '(': '（', ')': '）' })[c] ?? c);
}
