/** The Nodes tree: the provider, its element types, and the item builders (one file per type in items/). */
export { NodesTreeProvider } from './provider';
export type { TreeContext, TreeNode, TreeNodeOf } from './types';
export { nodeDescription } from './items/node';
export { gib, gpuDescription } from './items/gpu';
export { serverDescription, serverLabel } from './items/server';
