/**
 * Entry point of the extension-host tests (`extensionTestsPath`): runs mocha inside the real
 * extension host, with @vscode/test-electron (`npm run test:vscode`) or in code-server through the
 * workbench `payload` URL route (test/e2e/extensionHost.test.ts). Same suite in both.
 */
import { readdirSync } from 'node:fs';
import * as path from 'node:path';

export async function run(): Promise<void> {
  // mocha 12 is ESM-first: its CommonJS entry exposes the class under one of these names.
  let m;
  try {
    m = require('mocha');
  } catch {
    // Hosts whose Node cannot require() ES modules (older Electron): the CommonJS build directly.

    m = require('mocha/lib/mocha.cjs');
  }
  const Mocha = m.Mocha || m.default || m;
  const mocha = new Mocha({ ui: 'bdd', reporter: 'spec', color: false, timeout: 120_000, slow: 10_000 });
  const dir = path.join(__dirname, 'suite');
  // GS_HOST_SUITE=RE runs only the suite files whose names match (debugging one file in code-server)
  const only = process.env.GS_HOST_SUITE ? new RegExp(process.env.GS_HOST_SUITE) : null;
  for (const f of readdirSync(dir)
    .filter((f) => f.endsWith('.test.js') && (!only || only.test(f)))
    .sort())
    mocha.addFile(path.join(dir, f));
  if (typeof mocha.loadFilesAsync === 'function') await mocha.loadFilesAsync();
  const failures = await new Promise<number>((resolve) => mocha.run((n: number) => resolve(n)));
  if (failures > 0) throw new Error(`${failures} extension-host test(s) failed.`);
}
