/**
 * Grouping of the node list for the tree: flat, or by where each node came from — an ssh config file that
 * the main config `Include`s (SkyPilot's `~/.sky/generated/ssh/*`, dstack's `~/.dstack/ssh/config`, a team's
 * `conf.d/*.conf`) becomes its own group, and a `gpuSessions.nodes[].group` names one. Nodes of the main
 * config, settings entries without a group, the demo node and "This machine" stay at the top level.
 * Hosts of the ssh config that are clearly not GPU nodes (code hosts such as github.com, or a host whose probe
 * found no nvidia-smi) go last, under "Other hosts". Pure: no file access, no `vscode`.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import type { NodeSpec } from './config';
import { sshDir } from './config';

const TREE_GROUPINGS = ['flat', 'configFile'] as const;
type TreeGrouping = (typeof TREE_GROUPINGS)[number];

interface NodeGroup {
  /** `file:<absolute path>`, `group:<name>` or `other`: stable across reloads, distinct between the kinds. */
  key: string;
  /** The file relative to ~/.ssh (`conf.d/team.conf`), `~/…` outside it, or the setting's group name. */
  label: string;
  /** The ssh config file of a file group (absolute). */
  file?: string;
  /** The "Other hosts" group: hosts of the ssh config that are clearly not GPU nodes (shown last, collapsed). */
  other?: boolean;
  nodes: NodeSpec[];
}

export interface GroupedNodes {
  /** Shown at the top level, in list order. */
  top: NodeSpec[];
  /** In the order of their first node in the list (the order ssh config lists them). */
  groups: NodeGroup[];
}

interface GroupingOptions {
  mode: TreeGrouping;
  /** The main ssh config file (its own hosts are not a group). */
  rootConfigFile: string;
  /** Home folder for labels (default os.homedir()). */
  homeDir?: string;
  /** An ssh-config host that answered the probe without any nvidia-smi (not a GPU node); none when unknown. */
  notGpu?: (n: NodeSpec) => boolean;
}

/**
 * Hosts that serve code or models over ssh (`git@github.com`): an ssh config lists them for git, never to run a
 * GPU job. Matched on the Host alias or the HostName, exactly or as a subdomain (`altssh.gitlab.com`).
 */
const CODE_HOSTS: readonly string[] = [
  'github.com',
  'gitlab.com',
  'bitbucket.org',
  'ssh.dev.azure.com',
  'vs-ssh.visualstudio.com',
  'codeberg.org',
  'git.sr.ht',
  'gitee.com',
  'source.developers.google.com',
  'huggingface.co',
  'hf.co',
];

export function isCodeHost(n: Pick<NodeSpec, 'name' | 'host'>): boolean {
  return [n.name, n.host].some((h) => {
    const x = String(h ?? '')
      .trim()
      .toLowerCase()
      .replace(/\.$/, '');
    return CODE_HOSTS.some((c) => x === c || x.endsWith('.' + c));
  });
}

const OTHER_HOSTS_LABEL = 'Other hosts';

/**
 * Goes under "Other hosts": an ssh-config host that is a code host or has no nvidia-smi. Never a settings entry,
 * the demo or this machine.
 */
function isOtherHost(n: NodeSpec, notGpu?: (n: NodeSpec) => boolean): boolean {
  return n.source === 'ssh-config' && (isCodeHost(n) || notGpu?.(n) === true);
}

/** A setting value as a grouping mode; anything else is the default, `configFile`. */
export function treeGrouping(v: unknown): TreeGrouping {
  return (TREE_GROUPINGS as readonly unknown[]).includes(v) ? (v as TreeGrouping) : 'configFile';
}

/** How a config file is labelled: relative to ~/.ssh inside it, `~/…` elsewhere in the home, else absolute. */
export function configFileLabel(file: string, homeDir: string = os.homedir()): string {
  const abs = path.resolve(file);
  const ssh = sshDir(homeDir);
  if (abs.startsWith(ssh + path.sep)) return abs.slice(ssh.length + 1);
  const home = path.resolve(homeDir);
  if (abs.startsWith(home + path.sep)) return `~${path.sep}${abs.slice(home.length + 1)}`;
  return abs;
}

export function groupNodes(nodes: NodeSpec[], opts: GroupingOptions): GroupedNodes {
  const others = nodes.filter((n) => isOtherHost(n, opts.notGpu));
  const otherGroup: NodeGroup[] = others.length ? [{ key: 'other', label: OTHER_HOSTS_LABEL, other: true, nodes: others }] : [];
  const gpu = nodes.filter((n) => !others.includes(n));
  if (opts.mode === 'flat') return { top: gpu, groups: otherGroup };
  const root = path.resolve(opts.rootConfigFile);
  const top: NodeSpec[] = [];
  const groups = new Map<string, NodeGroup>();
  for (const n of gpu) {
    const named = n.group?.trim();
    let key: string | undefined;
    let label = '';
    let file: string | undefined;
    if (named) {
      key = `group:${named}`;
      label = named;
    } else if (n.source === 'ssh-config' && n.sourceFile && path.resolve(n.sourceFile) !== root) {
      file = path.resolve(n.sourceFile);
      key = `file:${file}`;
      label = configFileLabel(file, opts.homeDir);
    }
    if (!key) {
      top.push(n);
      continue;
    }
    let g = groups.get(key);
    if (!g) {
      g = { key, label, nodes: [] };
      if (file) g.file = file;
      groups.set(key, g);
    }
    g.nodes.push(n);
  }
  return { top, groups: [...groups.values(), ...otherGroup] };
}
