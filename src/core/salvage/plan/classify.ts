/**
 * What a listed file is: selected, or left on the node with a reason.
 */
import { formatBytes } from '../../util/format';
import { redactArgv, redactText } from '../../util/redact';
import { LeftReason, ListedFile, Writer, isSecretStore } from './listing';
import { HubOrigin, isWeightsFile, modelFolderOf, weightsReason } from './weights';
import { LEFT_REASON_TEXT, WriterInfo } from '../salvageTypes';

export function writerInfo(w: Writer): WriterInfo {
  return { pid: w.pid, command: redactText(redactArgv(w.argv).join(' ')).slice(0, 400), writes: w.writes.slice(0, 50), server: w.server };
}

/** What a listed file is: selected, or left on the node with a reason. */
export function classifyFile(
  f: ListedFile,
  threshold: number,
  modelDirs: readonly string[],
  hubMeta: Map<string, HubOrigin> = new Map(),
): { leftReason: LeftReason | null; jobWeights: boolean; reason: string | null } {
  if (isSecretStore(f.path)) return { leftReason: 'secret-store', jobWeights: false, reason: LEFT_REASON_TEXT['secret-store'] };
  // a model folder's small files (config, tokenizer, chat template) are salvaged; its weights stay only on evidence
  const folder = modelFolderOf(f.path, modelDirs);
  if (folder && isWeightsFile(f, threshold)) return { ...weightsReason(f, folder, hubMeta), jobWeights: false };
  const jobWeights = f.kind === 'model';
  if (f.size > threshold)
    return {
      leftReason: 'large',
      jobWeights,
      reason:
        `larger than the ${formatBytes(threshold)} threshold${jobWeights ? ' — weights the job wrote, NOT re-downloadable' : ''}: listed, not downloaded ` +
        `unless chosen (--include-large)`,
    };
  return { leftReason: null, jobWeights, reason: null };
}
