/** The Nodes tree: the provider, its element types, and the item builders (one file per type in items/). */
export { NodesTreeProvider } from './provider';
export type { TreeNode } from './types';
