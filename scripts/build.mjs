// Bundles the extension (vscode external) and the CLI with esbuild.
// ssh2's optional native crypto binding and cpu-features stay external (see toolchain notes):
// they are loaded from node_modules at run time when present, else ssh2 falls back to JS ciphers.
import { build } from 'esbuild';
import { chmodSync, copyFileSync, mkdirSync } from 'node:fs';
import { nodeScriptsDefine } from './nodeScripts.mjs';

const common = {
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'cjs',
  sourcemap: true,
  logLevel: 'warning',
  // Heavy or native dependencies load from node_modules at run time, lazily: @aws-sdk only when S3 is
  // checked, s3rver only for the CLI demo. The bundles stay small, so activation parses little.
  // The MCP SDK (and zod, which only it uses) loads only for `gpu-sessions mcp`.
  define: {
    // The scripts that run on a node, the node guard's included, travel as text inside the bundles
    // (src/core/util/nodeScripts.ts).
    GS_NODE_SCRIPTS: nodeScriptsDefine('.'),
  },
  external: ['vscode', 'ssh2', '@aws-sdk/*', 's3rver', '*.node', 'cpu-features', '@modelcontextprotocol/*', 'zod'],
};
await Promise.all([
  build({ ...common, entryPoints: ['src/extension/extension.ts'], outfile: 'dist/extension.js' }),
  build({ ...common, entryPoints: ['src/cli/main.ts'], outfile: 'dist/cli.js', banner: { js: '#!/usr/bin/env node' } }),
  // Worker threads of parallel salvage transfers (found next to the bundle that starts them).
  build({ ...common, entryPoints: ['src/core/salvage/transfer/parallelWorker.ts'], outfile: 'dist/salvageWorker.js' }),
  // Worker threads of `parse-log --summary` on a large file (the CLI only).
  build({ ...common, entryPoints: ['src/core/sglang/logParallelWorker.ts'], outfile: 'dist/parseLogWorker.js' }),
]);
chmodSync('dist/cli.js', 0o755);
// The Node Dashboard's charting library, shipped with the extension (no CDN): uPlot's own dist files.
mkdirSync('media/vendor', { recursive: true });
for (const f of ['uPlot.iife.min.js', 'uPlot.min.css']) copyFileSync(`node_modules/uplot/dist/${f}`, `media/vendor/${f}`);
