/**
 * Model weights left on the node only on evidence.
 *
 * A model folder's small files (config.json, tokenizer files, the chat template: often edited by hand) are
 * salvaged like any other file. Its weights (weight-file extensions, or anything above the size threshold) are
 * left with a reason that says what is known:
 *   - `on-the-hub`: a Hugging Face cache entry (`models--org--name/snapshots/<revision>/…`), or the download
 *     metadata `huggingface-cli download --local-dir` writes (`<dir>/.cache/huggingface/download/<file>.metadata`,
 *     first line the commit) for that very file;
 *   - `in-s3`: the S3 check found them;
 *   - `origin-unknown`: nothing shows they exist anywhere else. The verdict is then unsafe (`unique-weights`)
 *     unless the user includes them or accepts leaving them (`--leave PATH`, or the VS Code review's choice).
 */
import { formatBytes } from '../../util/format';
import { isUnder } from '../dest/paths';

/** Extensions of weight files. */
export const MODEL_EXT = ['.safetensors', '.bin', '.pt', '.pth', '.gguf', '.ckpt', '.h5', '.onnx'];

interface ListedFile {
  path: string;
  size: number;
  mtime?: string;
}

type WeightsReason = 'on-the-hub' | 'in-s3' | 'origin-unknown';

export interface HubOrigin {
  repo: string | null;
  revision: string | null;
  /** Where the evidence is: the cache entry or the metadata file. */
  evidence: string;
}

const HUB_CACHE = /\/models--([^/]+)\/(snapshots|blobs)\/([^/]+)\//;
const REVISION = /^[0-9a-f]{7,64}$/;

/** A Hugging Face hub cache entry: `…/models--Qwen--Qwen3-0.6B/snapshots/c1899de/model.safetensors`. */
export function hubCacheOrigin(p: string): HubOrigin | null {
  const m = HUB_CACHE.exec(p);
  if (!m) return null;
  const repo = m[1].split('--').join('/');
  return { repo, revision: m[2] === 'snapshots' ? m[3] : null, evidence: p.slice(0, m.index + m[0].length - 1) };
}

/**
 * The listing's `hfmeta` section, NUL-separated: `M <model folder>`, then per metadata file `F <path below the
 * download folder> <size> <mtime> <its first line>`. Returns the weights file each metadata file vouches for, with
 * its revision, and the metadata files themselves: the evidence comes home with the salvage (a few hundred bytes
 * each), since the `.cache` folder that holds them is otherwise left as a cache.
 */
export function parseDownloadMetadata(text: string): { origins: Map<string, HubOrigin>; files: ListedFile[] } {
  const origins = new Map<string, HubOrigin>();
  const files: ListedFile[] = [];
  const t = text.replace(/^\n/, '').split('\0');
  let dir: string | null = null;
  for (let i = 0; i < t.length;) {
    if (t[i] === 'M' && i + 1 < t.length) {
      dir = t[i + 1].startsWith('/') ? t[i + 1] : null;
      i += 2;
    } else if (t[i] === 'F' && i + 4 < t.length) {
      const [rel, size, mtime, first] = t.slice(i + 1, i + 5);
      i += 5;
      const rev = first.trim();
      if (!dir || !rel.endsWith('.metadata') || !REVISION.test(rev)) continue;
      const file = rel.slice(0, -'.metadata'.length);
      if (!file || rel.split('/').some((x) => x === '..' || x === '.' || x === '')) continue;
      const evidence = `${dir}/.cache/huggingface/download/${rel}`;
      origins.set(`${dir}/${file}`, { repo: null, revision: rev, evidence });
      files.push({ path: evidence, size: Number(size) || 0, mtime: new Date(Math.round(Number(mtime) * 1000) || 0).toISOString() });
    } else i++;
  }
  return { origins, files };
}

/** Shell for the listing script: each model folder's download metadata (bounded), as parseDownloadMetadata reads it. */
export function downloadMetadataScript(modelsFile: string): string {
  return `cut -f2- "${modelsFile}" | sort -u | while IFS= read -r m; do
  [ -d "$m/.cache/huggingface/download" ] || continue
  printf 'M\\000%s\\000' "$m"
  find "$m/.cache/huggingface/download" -maxdepth 8 -type f -name '*.metadata' -size -8k -printf 'F\\000%P\\000%s\\000%T@\\000' \\
    -exec sh -c 'head -n 1 "$1" | tr -d "\\000\\n"; printf "\\000"' _ {} \\; 2>/dev/null | head -z -n 150000
done`;
}

/** Weights (not the small files beside them): a weight-file extension, or above the size threshold. */
export function isWeightsFile(f: Pick<ListedFile, 'path' | 'size'>, threshold: number): boolean {
  const base = f.path.slice(f.path.lastIndexOf('/') + 1).toLowerCase();
  return f.size > threshold || MODEL_EXT.some((e) => base.endsWith(e));
}

/** The model folder (or hub cache entry) a path is in, or null. */
export function modelFolderOf(p: string, modelDirs: readonly string[]): string | null {
  const hub = hubCacheOrigin(p);
  if (hub) return hub.evidence;
  let best: string | null = null;
  for (const d of modelDirs) if (isUnder(p, d) && p !== d && (!best || d.length > best.length)) best = d;
  return best;
}

/** Why a weights file in a model folder stays on the node (before the S3 check). */
export function weightsReason(
  f: Pick<ListedFile, 'path' | 'size'>,
  folder: string,
  hubMeta: Map<string, HubOrigin>,
): { leftReason: WeightsReason; reason: string } {
  const o = hubCacheOrigin(f.path) ?? hubMeta.get(f.path) ?? null;
  if (o) {
    const what = [o.repo ? o.repo : null, o.revision ? `revision ${o.revision}` : null].filter(Boolean).join(' at ');
    return { leftReason: 'on-the-hub', reason: `on the Hugging Face Hub${what ? `: ${what}` : ''} (evidence: ${o.evidence})` };
  }
  return {
    leftReason: 'origin-unknown',
    reason:
      `weights in the model folder ${folder} that nothing shows exist anywhere else (no Hugging Face cache ` +
      `entry, no download metadata): include them (--include-large) or accept leaving them (--leave ${folder})`,
  };
}

/** Is `p` under one of the paths the user accepted leaving (`--leave`)? */
export function accepted(p: string, leave: string[] | undefined): boolean {
  return (leave ?? []).some((l) => isUnder(p, l.replace(/\/+$/, '') || '/'));
}

interface WeightsItem {
  remotePath: string;
  size: number;
  selected: boolean;
  leftReason: string | null;
  reason: string | null;
  s3: string;
  leaveAccepted?: boolean;
}

/** After the S3 check: unknown-origin weights that S3 holds are `in-s3`. */
export function settleWeightsInS3(items: WeightsItem[]): void {
  for (const it of items)
    if (!it.selected && it.leftReason === 'origin-unknown' && it.s3 === 'present') {
      it.leftReason = 'in-s3';
      it.reason = 'weights the S3 check found in the bucket';
    }
}

/** The `unique-weights` reason: folders of unknown-origin weights left on the node without the user accepting it. */
export function uniqueWeightsMessage(items: WeightsItem[], modelDirs: readonly string[]): string | null {
  const left = items.filter((i) => !i.selected && i.leftReason === 'origin-unknown' && !i.leaveAccepted);
  if (!left.length) return null;
  const by = new Map<string, { n: number; bytes: number }>();
  for (const i of left) {
    const d = modelFolderOf(i.remotePath, modelDirs) ?? i.remotePath.slice(0, i.remotePath.lastIndexOf('/')) ?? '/';
    const g = by.get(d) ?? { n: 0, bytes: 0 };
    g.n++;
    g.bytes += i.size;
    by.set(d, g);
  }
  const parts = [...by].map(([d, g]) => `${d} (${g.n} file(s), ${formatBytes(g.bytes)})`);
  const first = [...by.keys()][0];
  return (
    `weights of unknown origin would be left on the node: ${parts.join('; ')}; nothing shows they exist anywhere ` +
    `else. Salvage them (--include-large), or accept leaving them (--leave ${first})`
  );
}
