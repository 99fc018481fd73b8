/**
 * Which checklist step an item of a kind belongs to.
 */
import { SalvageItem, StepId } from '../salvageTypes';

export function stepOf(kind: SalvageItem['kind']): StepId {
  switch (kind) {
    case 'script':
    case 'launch-script':
    case 'python':
    case 'server-cmdline':
      return 'scripts';
    case 'log':
    case 'progress':
      return 'logs';
    case 'config':
    case 'patch':
    case 'git-repo':
    case 'git-state':
      return 'configs';
    default:
      return 'data';
  }
}
