/**
 * How the Nodes tree re-renders live figures without breaking hover, click and context menus (rows
 * re-rendered every 0.5 s, tooltips never appeared, clicks failed with "Actual command not found").
 *
 * VS Code drops the handles (and the command arguments) of an element and everything under it whenever the
 * element is re-rendered. So: per node at most one render every THROTTLE_MS; the rows already shown are kept as
 * the same objects and re-rendered only when what they show (label, description, tooltip, icon) changed; the node
 * itself, with its subtree, only when its own row changed or the set of rows under it did.
 */
import type * as vscode from 'vscode';
import type { TreeNode } from './types';

/**
 * A hover lasts until the row's next render (VS Code rebuilds a rendered row's hover on every render): 5 s, the top of
 * the 2–5 s it once was, leaves a tooltip readable for ~4.5 s while the figures keep moving.
 */
const THROTTLE_MS = 5000;

/**
 * A row whose only change is its figures (tok/s, running, queue, GPU %, dollars) is re-rendered at most this often:
 * every render of a row closes its open hover (VS Code sets up the row's hover anew on each render), so a server
 * tooltip vanished within seconds while its figures moved. A change of what the row says (a state, a
 * health word, an icon, a new row) is still shown within THROTTLE_MS. A row with rows under it (the node, a group)
 * also waits for the window of the row under it rendered last, since its render re-renders them all.
 */
const FIGURES_MS = 30_000;

/** A signature with its figures masked: two renders of the same shape differ only in their numbers. */
export function shapeOf(sig: string): string {
  return sig.replace(/\d[\d,.:]*/g, '#');
}

/**
 * What a rendered row shows: two renders with the same signature look the same. A node's tooltip (its probe time)
 * is left out: it changes with every probe and would re-render the whole node for a time nobody is looking at.
 */
export function itemSignature(item: vscode.TreeItem): string {
  const label = typeof item.label === 'string' ? item.label : (item.label?.label ?? '');
  const tooltip = item.id?.startsWith('node:') ? '' : typeof item.tooltip === 'string' ? item.tooltip : (item.tooltip?.value ?? '');
  const icon = item.iconPath as { id?: string; color?: { id?: string } } | undefined;
  return JSON.stringify([label, item.description ?? '', tooltip, icon?.id ?? '', icon?.color?.id ?? '', item.contextValue ?? '']);
}

interface Shown {
  /** the node element handed to the view */
  node: TreeNode;
  nodeSig: string;
  /** when the node row was last rendered */
  nodeAt: number;
  /** children handed to the view, per parent key ("" = the node's own children, else the group's id), with when each
   *  was last rendered */
  kids: Map<string, { els: TreeNode[]; sigs: string[]; at: number[] }>;
}

interface LiveRenderHost {
  render(el: TreeNode): vscode.TreeItem;
  /** The children the parent would have now (same kinds of objects as getChildren returns). */
  childrenNow(el: TreeNode): TreeNode[];
  fire(els: TreeNode[] | undefined): void;
}

/** A stable key of an element (its TreeItem id, without rendering it). */
export function elementKey(el: TreeNode): string {
  switch (el.type) {
    case 'node':
      return `node:${el.node.name}`;
    case 'nodeGroup':
      return `nodeGroup:${el.key}`;
    case 'group':
      return `${el.node}:${el.group}`;
    case 'gpu':
      return `${el.node}:gpu:${el.gpu.index}`;
    case 'lostGpu':
      return `${el.node}:lostGpu:${el.lost.index ?? el.lost.busId ?? el.lost.message}`;
    case 'server':
      return `${el.node}:server:${el.server.port}:${el.server.pid}`;
    case 'gateway':
      return `${el.node}:gateway:${el.gateway.pid}`;
    case 'gatewayWorker':
      return `${el.node}:gateway:${el.gatewayPid}:worker:${el.url}`;
    case 'kind':
      return `${el.node}:kind:${el.kind}`;
    case 'artifact':
      return `${el.node}:artifact:${el.artifact.path}`;
    case 'error':
      return `${el.node}:error:${el.code}:${el.message}`;
    case 'info':
      return `${el.node}:info:${el.live ?? el.label}`;
  }
}

export class LiveRender {
  private readonly shown = new Map<string, Shown>();
  private readonly last = new Map<string, number>();
  private readonly timers = new Map<string, NodeJS.Timeout>();
  /** per node: a figures-only change held back, shown when its window ends */
  private readonly late = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly host: LiveRenderHost,
    private readonly throttleMs = THROTTLE_MS,
    private readonly figuresMs = FIGURES_MS,
  ) {}

  /** The view asked for these children (or rendered this node): remember what it shows. */
  noteNode(name: string, node: TreeNode): void {
    const cur = this.shown.get(name);
    if (cur && cur.node === node) return;
    this.shown.set(name, { node, nodeSig: itemSignature(this.host.render(node)), nodeAt: Date.now(), kids: new Map() });
  }

  noteChildren(name: string, parentKey: string, els: TreeNode[]): void {
    const s = this.shown.get(name);
    if (!s) return;
    const now = Date.now();
    s.kids.set(parentKey, { els, sigs: els.map((e) => itemSignature(this.host.render(e))), at: els.map(() => now) });
  }

  /**
   * When a row whose only change is its figures may be rendered: its render re-renders every row under it (VS Code
   * refreshes an element with its subtree), closing their hovers too, so it waits for the window of whichever of them
   * was rendered last (`quietAt`), and never longer than two windows after its own render (`at`).
   */
  private figuresDueAt(at: number, quietAt: number): number {
    return Math.min(Math.max(at, quietAt) + this.figuresMs, at + 2 * this.figuresMs);
  }

  /** Whether a row whose signature changed is rendered now: its shape changed, or its figures' window is over. */
  private due(prev: string, sig: string, at: number, quietAt: number, now: number, urgent: boolean): boolean {
    return urgent || shapeOf(prev) !== shapeOf(sig) || now >= this.figuresDueAt(at, quietAt);
  }

  /** When a row under `key` ("" = the node) was last rendered (0 when none is shown). */
  private latestUnder(s: Shown, key: string): number {
    const k = s.kids.get(key);
    if (!k) return 0;
    let latest = 0;
    k.els.forEach((el, i) => (latest = Math.max(latest, k.at[i], this.latestUnder(s, elementKey(el)))));
    return latest;
  }

  /** Something the node shows may have changed: render what changed, at most once per throttle window. */
  schedule(name: string): void {
    if (this.timers.has(name)) return;
    const wait = this.throttleMs - (Date.now() - (this.last.get(name) ?? 0));
    if (wait <= 0) return this.update(name);
    this.timers.set(
      name,
      setTimeout(() => {
        this.timers.delete(name);
        this.update(name);
      }, wait),
    );
  }

  /**
   * Renders what changed now (`urgent`: a change the user made, a verdict, a transition: figures too; else a row whose
   * only change is its figures waits for its FIGURES_MS window, so that an open tooltip stays).
   */
  update(name: string, urgent = false): void {
    const now = Date.now();
    this.last.set(name, now);
    const s = this.shown.get(name);
    if (!s) return this.host.fire(undefined);
    const nodeSig = itemSignature(this.host.render(s.node));
    let held = nodeSig !== s.nodeSig;
    const nodeQuiet = held ? this.latestUnder(s, '') : 0;
    // when the first held row's window ends (a timer set for an earlier window may fire before it)
    let soonest = held ? this.figuresDueAt(s.nodeAt, nodeQuiet) - now : Infinity;
    if (!this.sameStructure(s) || (held && this.due(s.nodeSig, nodeSig, s.nodeAt, nodeQuiet, now, urgent))) {
      s.nodeSig = nodeSig;
      s.nodeAt = now;
      s.kids.clear();
      return this.host.fire([s.node]);
    }
    const changed: TreeNode[] = [];
    for (const k of s.kids.values())
      k.els.forEach((el, i) => {
        const sig = itemSignature(this.host.render(el));
        if (sig === k.sigs[i]) return;
        const quiet = this.latestUnder(s, elementKey(el));
        if (!this.due(k.sigs[i], sig, k.at[i], quiet, now, urgent)) {
          held = true;
          soonest = Math.min(soonest, this.figuresDueAt(k.at[i], quiet) - now);
          return;
        }
        k.sigs[i] = sig;
        k.at[i] = now;
        changed.push(el);
      });
    if (changed.length) this.host.fire(changed);
    if (held) this.showLater(name, Math.max(1, Math.min(2 * this.figuresMs, soonest) + 1));
  }

  /** Figures held back are shown when their window ends (in `waitMs`), even if nothing else changes meanwhile. */
  private showLater(name: string, waitMs: number): void {
    if (this.late.has(name)) return;
    this.late.set(
      name,
      setTimeout(() => {
        this.late.delete(name);
        this.schedule(name);
      }, waitMs),
    );
  }

  private sameStructure(s: Shown): boolean {
    for (const [key, k] of s.kids) {
      const p = key === '' ? s.node : this.parentOf(s, key);
      if (!p) return false;
      const now = this.host.childrenNow(p).map(elementKey).join('\n');
      if (now !== k.els.map(elementKey).join('\n')) return false;
    }
    return true;
  }

  private parentOf(s: Shown, key: string): TreeNode | undefined {
    for (const k of s.kids.values()) for (const el of k.els) if (elementKey(el) === key) return el;
    return undefined;
  }

  forget(name: string): void {
    const t = this.timers.get(name);
    if (t) clearTimeout(t);
    this.timers.delete(name);
    const l = this.late.get(name);
    if (l) clearTimeout(l);
    this.late.delete(name);
    this.shown.delete(name);
  }

  dispose(): void {
    this.timers.forEach((t) => clearTimeout(t));
    this.timers.clear();
    this.late.forEach((t) => clearTimeout(t));
    this.late.clear();
  }
}
