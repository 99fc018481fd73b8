/**
 * The one way a command finds its node: from a tree element (a node, or anything under one), a node
 * name passed by another command or a test, or — when neither names one — a quick pick of the nodes.
 */
import * as vscode from 'vscode';
import { isCodeHost } from '../core/ssh/groups';
import type { Fleet } from '../core/node/fleet';
import type { NodeSpec } from '../core/ssh/config';
import type { TreeNode } from './tree';

interface PickOptions {
  /** Quick-pick title when the argument names no node. */
  title: string;
  placeHolder?: string;
  /** Accept only a node element (not a server, GPU, artifact… under it). */
  nodeElementOnly?: boolean;
}

function isTreeNode(arg: unknown): arg is TreeNode {
  return !!arg && typeof arg === 'object' && 'type' in arg && typeof (arg as { type: unknown }).type === 'string';
}

export class NodeResolver {
  constructor(private readonly fleet: Fleet) {}

  /** The node name an argument carries: a string, a node element, or (unless nodeElementOnly) any element under a node. */
  nameOf(arg: unknown, opts: { nodeElementOnly?: boolean } = {}): string | undefined {
    if (typeof arg === 'string') return arg;
    if (!isTreeNode(arg)) return undefined;
    if (arg.type === 'node') return arg.node.name;
    if (arg.type === 'nodeGroup') return undefined;
    return opts.nodeElementOnly ? undefined : arg.node;
  }

  /** The node an argument names, if it is one of the fleet's. */
  nodeOf(arg: unknown, opts: { nodeElementOnly?: boolean } = {}): NodeSpec | undefined {
    const name = this.nameOf(arg, opts);
    return name ? this.fleet.node(name) : undefined;
  }

  /** The node the argument names, else the one the user picks; undefined (with a message) when there is none. */
  async resolve(arg: unknown, opts: PickOptions): Promise<NodeSpec | undefined> {
    const name = this.nameOf(arg, opts);
    if (name) {
      const node = this.fleet.node(name);
      if (!node) void vscode.window.showErrorMessage(`GPU Sessions: unknown node ${name}.`);
      return node;
    }
    // Code hosts (github.com, …) are never GPU nodes: they are not offered for GPU actions.
    const nodes = this.fleet.nodes().filter((n) => !isCodeHost(n));
    if (!nodes.length) {
      void vscode.window.showErrorMessage(
        'GPU Sessions: no GPU node. Add Host entries to ~/.ssh/config or gpuSessions.nodes, or try Start Demo Node.',
      );
      return undefined;
    }
    const pick = await vscode.window.showQuickPick(
      nodes.map((n) => ({ label: n.name, description: `${n.user ? n.user + '@' : ''}${n.host}:${n.port}` })),
      { title: opts.title, placeHolder: opts.placeHolder ?? 'Which node?' },
    );
    return pick ? this.fleet.node(pick.label) : undefined;
  }
}
