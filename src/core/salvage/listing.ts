/**
 * What salvage considers: every artifact the probe knows plus data files (completions, checkpoints,
 * datasets) and symlinks (listed, never followed), under the node's roots, in ONE exec.
 */
import type { RemoteOperation } from '../remote/operation';
import { ArtifactKind, PRUNE_DIRS, classifyArtifact, remoteRootExpr } from '../node/probe';
import { sectionPrologue, sectionedOperation, splitSections } from '../remote/sections';
import { shq } from '../remote/quote';

export type SalvageKind = ArtifactKind | 'data' | 'model' | 'symlink';

export interface ListedFile {
  path: string;
  kind: SalvageKind;
  size: number;
  mtime: string;
  /** For symlinks: the link target as stored. */
  linkTarget?: string;
}

export interface SalvageListing {
  home: string;
  roots: string[];
  /** Resolved absolute roots (realpath), to check symlink targets against. */
  realRoots: string[];
  files: ListedFile[];
  truncated: boolean;
}

const DATA_EXT = [
  '.jsonl',
  '.json',
  '.csv',
  '.tsv',
  '.parquet',
  '.arrow',
  '.txt',
  '.md',
  '.npy',
  '.npz',
  '.ipynb',
  '.toml',
  '.ini',
  '.cfg',
  '.tar',
  '.gz',
  '.zst',
  '.pkl',
];
const MODEL_EXT = ['.safetensors', '.bin', '.pt', '.pth', '.gguf', '.ckpt', '.h5', '.onnx'];

export function classifySalvage(p: string): SalvageKind | null {
  const a = classifyArtifact(p);
  if (a) return a;
  const base = p.slice(p.lastIndexOf('/') + 1).toLowerCase();
  if (MODEL_EXT.some((e) => base.endsWith(e))) return 'model';
  if (DATA_EXT.some((e) => base.endsWith(e))) return 'data';
  return null;
}

export function salvageListOperation(opts: { roots?: string[]; maxDepth?: number; maxFiles?: number }): RemoteOperation<SalvageListing> {
  const roots = opts.roots && opts.roots.length ? opts.roots : ['~'];
  const depth = Math.max(1, Math.min(32, Math.floor(opts.maxDepth ?? 8)));
  const max = Math.max(1, Math.floor(opts.maxFiles ?? 50_000));
  const prune = PRUNE_DIRS.map((d) => `-name ${shq(d)}`).join(' -o ');
  const rootExprs = roots.map(remoteRootExpr).join(' ');
  const script = (nonce: string) => `
${sectionPrologue(nonce)}
sec home; printf '%s' "$HOME"
sec realroots
for r in ${rootExprs}; do readlink -f -- "$r" 2>/dev/null || printf '%s\\n' "$r"; done
sec files
for r in ${rootExprs}; do
  [ -d "$r" ] || continue
  find "$r" -maxdepth ${depth} \\( -type d -name .git -printf 'G\\t0\\t0\\t%h\\000' -prune \\) -o \\( -type d \\( ${prune} -o \\( -name '.?*' -mindepth 1 \\) \\) -prune \\) -o \\( -type f -printf 'F\\t%s\\t%T@\\t%p\\000' \\) -o \\( -type l -printf 'L\\t%s\\t%T@\\t%p\\t%l\\000' \\) 2>/dev/null
done | head -z -n ${max + 1}
sec end
`;
  return sectionedOperation({
    name: 'salvage-list',
    what: "Listing the node's files",
    node: 'the node',
    script,
    timeoutMs: 120_000,
    maxOutputBytes: 256 * 1024 * 1024,
    parse(text, nonce) {
      const s = splitSections(text, nonce);
      const files: ListedFile[] = [];
      let count = 0;
      let truncated = false;
      for (const rec of (s.get('files') ?? '').split('\0')) {
        const x = rec.replace(/^\n/, '');
        if (!x) continue;
        if (++count > max) {
          truncated = true;
          break;
        }
        const f = x.split('\t');
        const tag = f[0];
        if (tag === 'G') {
          files.push({ path: f.slice(3).join('\t'), kind: 'git-repo', size: 0, mtime: new Date(0).toISOString() });
          continue;
        }
        if (tag === 'L') {
          // path and target may contain tabs; the target is the last field by construction only if the
          // path has none. Tabs in symlink paths are rare; keep the first split.
          files.push({
            path: f[3],
            kind: 'symlink',
            size: Number(f[1]) || 0,
            mtime: new Date(Math.round(Number(f[2]) * 1000) || 0).toISOString(),
            linkTarget: f.slice(4).join('\t'),
          });
          continue;
        }
        if (tag !== 'F') continue;
        const p = f.slice(3).join('\t');
        const kind = classifySalvage(p);
        if (!kind) continue;
        files.push({ path: p, kind, size: Number(f[1]) || 0, mtime: new Date(Math.round(Number(f[2]) * 1000) || 0).toISOString() });
      }
      files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
      return {
        home: (s.get('home') ?? '').trim(),
        roots,
        realRoots: (s.get('realroots') ?? '')
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean),
        files,
        truncated,
      };
    },
  });
}

/** Is an absolute (resolved) path inside one of the roots? */
export function insideRoots(p: string, realRoots: string[]): boolean {
  return realRoots.some((r) => p === r || p.startsWith(r.endsWith('/') ? r : r + '/'));
}
