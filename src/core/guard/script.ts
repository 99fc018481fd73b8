/**
 * The node guard's Python files: real .py files next to this module, linted with pyflakes, loaded (and carried
 * by the bundles) as every node script is (util/nodeScripts.ts).
 */
import { nodeScript } from '../util/nodeScripts';

export const GUARD_PY_FILES = ['guard.py', 'provider.py', 'seen.py'] as const;
export type GuardPyFile = (typeof GUARD_PY_FILES)[number];

export function guardPy(name: GuardPyFile): string {
  return nodeScript(`guard/${name}`);
}
