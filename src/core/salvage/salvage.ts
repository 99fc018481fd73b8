/**
 * Salvage Node: the checklist the seeds ran by hand before a rented node was shut down.
 *
 *   plan → (review) → scripts → logs & progress → configs & patches → data → S3 → environment → verdict
 *
 * Everything lands in `<base>/<node>/<timestamp>/`: the files mirrored under `files/`, git state under
 * `git/`, `running-servers.sh`, `environment.json|md`, `salvage-manifest.json` (rewritten atomically as
 * items finish, so a cancelled or crashed run leaves a consistent manifest) and `SALVAGE.md`.
 * A rerun resumes the latest unfinished folder: verified files whose local bytes still hash the same
 * and whose remote size and mtime did not change are skipped.
 */
import { createHash } from 'node:crypto';
import { createReadStream, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { GpuSessionsError, errorMessage } from '../util/errors';
import { formatBytes } from '../util/format';
import type { Logger } from '../util/logger';
import { nullLogger } from '../util/logger';
import { runOperation } from '../remote/operation';
import type { SglangServer } from '../sglang/serverArgv';
import { shq, shJoin } from '../remote/quote';
import { redactArgv, redactText } from '../util/redact';
import type { S3Mapping, S3Status, S3Target } from './s3';
import type { AbortLike, Transport } from '../ssh/transport';
import { ListedFile, SalvageKind, SalvageListing, insideRoots, salvageListOperation } from './listing';
import { gitStateOperation } from './gitState';
import { ensureParent, insideDest, localRelPath } from './paths';
import { TransferResult, downloadBatch, downloadOne, remoteHashes, remoteStats } from './transfer';

export type StepId = 'scripts' | 'logs' | 'configs' | 'data' | 's3' | 'environment';
export type StepStatus = 'pending' | 'running' | 'done' | 'failed' | 'skipped';
export type ItemStatus = 'verified' | 'failed' | 'skipped' | 'pending';

export const STEPS: Array<{ id: StepId; title: string }> = [
  { id: 'scripts', title: 'Scripts (launch, shell, Python) and the running servers’ command lines' },
  { id: 'logs', title: 'Logs and progress data' },
  { id: 'configs', title: 'Configs, patches and git state' },
  { id: 'data', title: 'Data files under the size threshold' },
  { id: 's3', title: 'S3: what is already safely stored' },
  { id: 'environment', title: 'Environment snapshot' },
];

export interface SalvageItem {
  remotePath: string;
  localPath: string | null;
  kind: SalvageKind | 'git-state' | 'server-cmdline';
  step: StepId;
  size: number;
  mtime: string;
  sha256: string | null;
  md5?: string | null;
  /** SHA-256 of the local file when it differs from the remote one (secrets redacted). */
  localSha256?: string | null;
  redacted?: boolean;
  /** The node's copy changed after it was verified (a live log still growing, a rewritten file). */
  changedAfterVerify?: boolean;
  selected: boolean;
  status: ItemStatus;
  reason: string | null;
  s3: S3Status;
  s3Key?: string | null;
}

export interface SalvageManifest {
  version: 1;
  node: string;
  host: Record<string, string | number | undefined>;
  startedAt: string;
  finishedAt: string | null;
  dest: string;
  roots: string[];
  sizeThreshold: number;
  s3: { target: string; endpoint?: string; objects: number; bytes: number; error?: string } | null;
  steps: Record<StepId, { status: StepStatus; reason?: string }>;
  items: SalvageItem[];
  verdict: 'safe' | 'unsafe' | null;
  lost: Array<{ remotePath: string; size: number; why: string }>;
  leftByChoice: Array<{ remotePath: string; size: number; s3: S3Status }>;
  environment?: { json: string; md: string; summary: string } | null;
}

export interface SalvageProgress {
  step: StepId | 'plan' | 'verdict';
  message: string;
  bytesDone: number;
  bytesTotal: number;
  filesDone: number;
  filesTotal: number;
}

export interface SalvageOptions {
  node: string;
  transport: Transport;
  /** Base folder; the run goes to `<base>/<node>/<timestamp>/`. */
  base: string;
  roots?: string[];
  maxDepth?: number;
  maxFiles?: number;
  /** Files above this size are listed but not downloaded unless chosen. Default 256 MiB. */
  sizeThreshold?: number;
  servers?: SglangServer[];
  s3?: (S3Target & { mappings?: S3Mapping[] }) | null;
  /** Review hook: receives the plan, returns the remote paths to download (default: the preselected ones). */
  review?: (items: SalvageItem[]) => Promise<string[] | undefined>;
  /** Keep secrets in downloaded text files (default: redact them). */
  keepSecrets?: boolean;
  concurrency?: number;
  signal?: AbortLike;
  onProgress?: (p: SalvageProgress) => void;
  log?: Logger;
  now?: Date;
  /** Environment snapshot; injected so the core stays testable. Default: ../snapshot takeSnapshot. */
  snapshot?: (t: Transport, node: string, servers: SglangServer[]) => Promise<{ json: unknown; markdown: string; summary: string }>;
}

const REDACT_KINDS = new Set<string>(['script', 'launch-script', 'python', 'config', 'log', 'progress', 'patch']);
const SMALL_FILE = 4 * 1024 * 1024;
const BATCH_BYTES = 48 * 1024 * 1024;
const BATCH_FILES = 400;

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

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}-${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export function safeNodeName(n: string): string {
  return n.replace(/[^A-Za-z0-9._@-]+/g, '_').replace(/^\.+/, '_') || 'node';
}

/** The folder to use: the latest unfinished or unsafe run of this node is resumed, else a new one. */
export function chooseRunDir(base: string, node: string, now: Date): { dir: string; previous: SalvageManifest | null } {
  const nodeDir = path.join(path.resolve(base), safeNodeName(node));
  let previous: SalvageManifest | null = null;
  if (existsSync(nodeDir)) {
    const runs = readdirSync(nodeDir)
      .filter((d) => /^\d{8}-\d{6}$/.test(d))
      .sort();
    const last = runs[runs.length - 1];
    if (last) {
      const mf = path.join(nodeDir, last, 'salvage-manifest.json');
      try {
        const m = JSON.parse(readFileSync(mf, 'utf8')) as SalvageManifest;
        if (m.verdict !== 'safe' || !m.finishedAt) return { dir: path.join(nodeDir, last), previous: m };
        previous = null;
      } catch {
        // No readable manifest: the run died before writing one; reuse the folder.
        return { dir: path.join(nodeDir, last), previous: null };
      }
    }
  }
  return { dir: path.join(nodeDir, stamp(now)), previous };
}

async function sha256File(abs: string): Promise<string | null> {
  return new Promise((resolve) => {
    const h = createHash('sha256');
    const s = createReadStream(abs);
    s.on('data', (b) => h.update(b));
    s.on('end', () => resolve(h.digest('hex')));
    s.on('error', () => resolve(null));
  });
}

function writeAtomic(abs: string, content: string): void {
  const tmp = abs + '.gs-tmp';
  writeFileSync(tmp, content);
  renameSync(tmp, abs);
}

/** A launch script that reproduces the running servers (argv redacted). */
export function renderServersScript(node: string, servers: SglangServer[]): string {
  const L = [
    '#!/bin/bash',
    `# SGLang servers that were running on ${node} when it was salvaged (${new Date().toISOString()}).`,
    '# Secrets in flags are redacted. Review before running.',
    'set -e',
    '',
  ];
  for (const s of servers) {
    const argv = redactArgv(s.args);
    L.push(`# pid ${s.pid}, port ${s.port}${s.gpus.length ? `, GPU ${s.gpus.join(',')}` : ''}${s.logFile ? `, log ${s.logFile}` : ''}`);
    if (s.cwd) L.push(`cd ${shq(s.cwd)}`);
    const env =
      s.cudaVisibleDevices !== null && s.cudaVisibleDevices !== undefined ? `CUDA_VISIBLE_DEVICES=${shq(s.cudaVisibleDevices)} ` : '';
    L.push(`${env}nohup ${shJoin(argv)} > ${shq(s.logFile ?? `sglang_${s.port}.log`)} 2>&1 &`, '');
  }
  return L.join('\n');
}

export class Salvager {
  readonly manifest: SalvageManifest;
  readonly dir: string;
  private readonly log: Logger;
  private bytesDone = 0;
  private bytesTotal = 0;
  private filesDone = 0;
  private filesTotal = 0;
  private lastWrite = 0;
  private fatal: string | null = null;
  private listing: SalvageListing | null = null;
  private readonly previous: SalvageManifest | null;

  constructor(private readonly o: SalvageOptions) {
    this.log = o.log ?? nullLogger;
    const now = o.now ?? new Date();
    const c = chooseRunDir(o.base, o.node, now);
    this.dir = c.dir;
    this.previous = c.previous;
    const steps = Object.fromEntries(STEPS.map((s) => [s.id, { status: 'pending' as StepStatus }])) as SalvageManifest['steps'];
    this.manifest = {
      version: 1,
      node: o.node,
      host: o.transport.describe(),
      startedAt: now.toISOString(),
      finishedAt: null,
      dest: this.dir,
      roots: o.roots ?? ['~'],
      sizeThreshold: o.sizeThreshold ?? 256 * 1024 * 1024,
      s3: null,
      steps,
      items: [],
      verdict: null,
      lost: [],
      leftByChoice: [],
      environment: null,
    };
  }

  private progress(step: SalvageProgress['step'], message: string): void {
    this.o.onProgress?.({
      step,
      message,
      bytesDone: this.bytesDone,
      bytesTotal: this.bytesTotal,
      filesDone: this.filesDone,
      filesTotal: this.filesTotal,
    });
  }

  private save(force = false): void {
    const now = Date.now();
    if (!force && now - this.lastWrite < 300) return;
    this.lastWrite = now;
    try {
      writeAtomic(path.join(this.dir, 'salvage-manifest.json'), JSON.stringify(this.manifest, null, 2) + '\n');
    } catch (e) {
      this.log.error(`Could not write the manifest: ${errorMessage(e)}`);
      if (!this.fatal) this.fatal = `cannot write to ${this.dir}: ${errorMessage(e)}`;
    }
  }

  private checkCancel(): void {
    if (this.o.signal?.aborted) throw new GpuSessionsError('cancelled', 'Salvage cancelled.');
  }

  /** List the node and build the plan (with preselection). */
  async plan(): Promise<SalvageItem[]> {
    try {
      mkdirSync(this.dir, { recursive: true });
      writeAtomic(path.join(this.dir, 'salvage-manifest.json'), JSON.stringify(this.manifest, null, 2) + '\n');
    } catch (e0) {
      const e = diagnoseWrite(this.dir, e0);
      const code = (e as NodeJS.ErrnoException).code ?? '';
      throw new GpuSessionsError(
        'io',
        `Cannot write the salvage folder ${this.dir} (${code || errorMessage(e)}): ${code === 'ENOSPC' ? 'the disk is full' : code === 'EROFS' ? 'the file system is read-only' : code === 'EACCES' || code === 'EPERM' ? 'permission denied' : errorMessage(e)}. Choose another destination (CLI --dest, setting gpuSessions.salvage.folder); nothing was downloaded.`,
      );
    }
    this.lastWrite = Date.now();
    this.progress('plan', 'Listing files on the node…');
    const t = this.o.transport;
    this.listing = await runOperation(
      t,
      salvageListOperation({ roots: this.o.roots, maxDepth: this.o.maxDepth, maxFiles: this.o.maxFiles }),
      this.o.signal,
    );
    const threshold = this.manifest.sizeThreshold;
    const items: SalvageItem[] = [];
    for (const f of this.listing.files) items.push(this.itemFor(f, threshold));
    if (this.listing.truncated) this.log.warn(`Listing truncated at ${this.o.maxFiles ?? 50000} files; raise the limit to see more.`);
    if (this.o.servers && this.o.servers.length) {
      items.push({
        remotePath: '(running SGLang servers)',
        localPath: 'running-servers.sh',
        kind: 'server-cmdline',
        step: 'scripts',
        size: 0,
        mtime: new Date().toISOString(),
        sha256: null,
        selected: true,
        status: 'pending',
        reason: null,
        s3: 'unknown',
      });
    }
    this.manifest.items = items;
    this.save(true);
    return items;
  }

  private itemFor(f: ListedFile, threshold: number): SalvageItem {
    const base: SalvageItem = {
      remotePath: f.path,
      localPath: null,
      kind: f.kind,
      step: stepOf(f.kind),
      size: f.size,
      mtime: f.mtime,
      sha256: null,
      selected: true,
      status: 'pending',
      reason: null,
      s3: 'unknown',
    };
    if (f.kind === 'symlink') {
      return {
        ...base,
        selected: false,
        status: 'skipped',
        reason: `symlink → ${f.linkTarget ?? '?'}; not followed (salvage never follows links${f.linkTarget && f.linkTarget.startsWith('/') && this.listing && !insideRoots(f.linkTarget, this.listing.realRoots) ? ', and this one leads outside the roots' : ''})`,
      };
    }
    if (f.kind === 'git-repo') return { ...base, kind: 'git-state', localPath: localRelPath(f.path, 'git') };
    try {
      base.localPath = localRelPath(f.path);
    } catch (e) {
      return { ...base, selected: false, status: 'skipped', reason: errorMessage(e) };
    }
    if (f.kind === 'model')
      return { ...base, selected: false, reason: 'model weights: listed, not downloaded unless chosen (usually re-downloadable)' };
    if (f.size > threshold)
      return {
        ...base,
        selected: false,
        reason: `larger than the ${Math.round(threshold / 1048576)} MiB threshold: listed, not downloaded unless chosen`,
      };
    return base;
  }

  /** Run everything after the plan (call plan() first, or run()). */
  async execute(selectedPaths?: string[]): Promise<SalvageManifest> {
    const m = this.manifest;
    if (selectedPaths) {
      const sel = new Set(selectedPaths);
      for (const it of m.items) {
        if (it.kind === 'symlink' || (it.status === 'skipped' && !it.localPath)) continue;
        it.selected = sel.has(it.remotePath);
        if (!it.selected) {
          it.status = 'skipped';
          it.reason ??= 'not selected';
        } else if (it.status === 'skipped') {
          it.status = 'pending';
          it.reason = null;
        }
      }
    } else {
      for (const it of m.items) if (!it.selected && it.status === 'pending') it.status = 'skipped';
    }
    try {
      this.resumeFromPrevious();
      const files = m.items.filter(
        (i) => i.selected && i.status === 'pending' && i.kind !== 'git-state' && i.kind !== 'server-cmdline' && i.localPath,
      );
      this.filesTotal = m.items.filter((i) => i.selected).length;
      this.filesDone = m.items.filter((i) => i.selected && i.status === 'verified').length;
      this.bytesTotal = files.reduce((a, b) => a + b.size, 0);
      for (const step of ['scripts', 'logs', 'configs', 'data'] as StepId[]) {
        this.checkCancel();
        await this.runFileStep(
          step,
          files.filter((f) => f.step === step),
        );
      }
      this.checkCancel();
      await this.recheckVerified();
      this.checkCancel();
      await this.runS3Step();
      this.checkCancel();
      await this.runEnvironmentStep();
    } catch (e) {
      const cancelled = e instanceof GpuSessionsError && e.code === 'cancelled';
      for (const it of m.items) {
        if (it.status === 'pending') {
          it.status = 'skipped';
          it.reason = cancelled ? 'cancelled before it was downloaded' : `not done: ${errorMessage(e)}`;
        }
      }
      for (const s of STEPS) {
        const st = m.steps[s.id];
        if (st.status === 'pending' || st.status === 'running')
          m.steps[s.id] = { status: cancelled ? 'skipped' : 'failed', reason: cancelled ? 'cancelled' : errorMessage(e) };
      }
      this.finish();
      if (!cancelled) throw e;
      return m;
    }
    this.finish();
    return m;
  }

  async run(): Promise<SalvageManifest> {
    const items = await this.plan();
    const chosen = this.o.review ? await this.o.review(items) : undefined;
    return this.execute(chosen);
  }

  /** Items verified by a previous run whose bytes are still intact locally and unchanged remotely. */
  private resumeFromPrevious(): void {
    const prev = this.previous;
    if (!prev) return;
    const byPath = new Map(prev.items.map((i) => [i.remotePath, i]));
    for (const it of this.manifest.items) {
      if (!it.selected || it.status !== 'pending' || !it.localPath || it.kind === 'git-state' || it.kind === 'server-cmdline') continue;
      const p = byPath.get(it.remotePath);
      if (!p || p.status !== 'verified' || p.size !== it.size || p.mtime !== it.mtime || p.localPath !== it.localPath || !p.sha256)
        continue;
      const abs = insideDest(this.dir, it.localPath);
      try {
        if (statSync(abs).size !== (p.redacted ? statSync(abs).size : it.size)) continue;
      } catch {
        continue;
      }
      // Re-hashing happens in runFileStep (async); mark as a candidate here.
      (it as SalvageItem & { _resume?: SalvageItem })._resume = p;
    }
  }

  /** One stat of every file verified in this run: anything that changed since is not safe yet. */
  private async recheckVerified(): Promise<void> {
    const items = this.manifest.items.filter(
      (i) => i.status === 'verified' && i.localPath && i.kind !== 'git-state' && i.kind !== 'server-cmdline',
    );
    if (!items.length) return;
    let stats: Map<string, { size: number; mtime: number }>;
    try {
      stats = await remoteStats(
        this.o.transport,
        items.map((i) => i.remotePath),
        this.o.signal,
      );
    } catch (e) {
      this.log.warn(`Could not re-check files after download: ${errorMessage(e)}`);
      return;
    }
    for (const it of items) {
      const st = stats.get(it.remotePath);
      if (!st) {
        it.changedAfterVerify = true;
        it.reason = 'verified, then removed or renamed on the node';
        continue;
      }
      const listedMtime = Math.floor(Date.parse(it.mtime) / 1000);
      if (st.size !== it.size) {
        it.changedAfterVerify = true;
        it.reason = `verified at ${it.size} B, but the node's copy is now ${st.size} B (still being written?); salvage again once it stops changing`;
      } else if (st.mtime > listedMtime + 1 && !it.reason?.includes('previous run')) {
        it.changedAfterVerify = true;
        it.reason = 'rewritten on the node after it was verified (same size, newer mtime); salvage again';
      }
    }
    this.save(true);
  }

  private markItem(it: SalvageItem, r: TransferResult, redactable: boolean): void {
    if (r.ok) {
      if (r.bytes !== it.size) {
        it.reason = `grew on the node while being read: verified the first ${r.bytes} B (listed ${it.size} B)`;
        it.size = r.bytes;
      }
      it.sha256 = r.remoteSha256;
      it.md5 = r.md5;
      it.status = 'verified';
      if (r.bytes === it.size && !it.reason?.startsWith('grew')) it.reason = null;
      if (redactable && !this.o.keepSecrets && it.localPath && it.size <= 32 * 1024 * 1024) {
        const abs = insideDest(this.dir, it.localPath);
        try {
          const text = readFileSync(abs, 'utf8');
          const red = redactText(text);
          if (red !== text) {
            writeAtomic(abs, red);
            it.redacted = true;
            it.localSha256 = createHash('sha256').update(red).digest('hex');
            it.reason = 'verified against the node, then secrets were redacted in the local copy';
          }
        } catch (e) {
          this.log.warn(`Could not scan ${it.remotePath} for secrets: ${errorMessage(e)}`);
        }
      }
    } else {
      it.status = 'failed';
      it.reason = r.reason;
      if (r.fatal && !this.fatal) this.fatal = r.reason;
    }
    this.filesDone++;
    this.save();
  }

  private async runFileStep(step: StepId, files: SalvageItem[]): Promise<void> {
    const m = this.manifest;
    const t = this.o.transport;
    const gitItems = step === 'configs' ? m.items.filter((i) => i.kind === 'git-state' && i.selected && i.status === 'pending') : [];
    const cmdItems = step === 'scripts' ? m.items.filter((i) => i.kind === 'server-cmdline' && i.selected && i.status === 'pending') : [];
    if (files.length === 0 && gitItems.length === 0 && cmdItems.length === 0) {
      const already = m.items.some((i) => i.step === step && i.status === 'verified');
      m.steps[step] = already
        ? { status: 'done', reason: 'already salvaged by a previous run' }
        : { status: 'skipped', reason: 'nothing of this kind selected on the node' };
      this.save(true);
      return;
    }
    m.steps[step] = { status: 'running' };
    this.save(true);
    this.progress(step, STEPS.find((s) => s.id === step)!.title);

    for (const it of cmdItems) {
      const content = renderServersScript(m.node, this.o.servers ?? []);
      const abs = insideDest(this.dir, it.localPath!);
      try {
        writeAtomic(abs, content);
        it.sha256 = createHash('sha256').update(content).digest('hex');
        it.size = Buffer.byteLength(content);
        it.status = 'verified';
        it.reason = 'generated from the running processes (flags with secrets redacted)';
      } catch (e) {
        it.status = 'failed';
        it.reason = errorMessage(e);
      }
      this.filesDone++;
    }

    // Resume: re-hash local copies of previously verified files.
    const todo: SalvageItem[] = [];
    for (const it of files) {
      const prev = (it as SalvageItem & { _resume?: SalvageItem })._resume;
      delete (it as SalvageItem & { _resume?: SalvageItem })._resume;
      if (prev) {
        const h = await sha256File(insideDest(this.dir, it.localPath!));
        if (h && h === (prev.localSha256 ?? prev.sha256)) {
          Object.assign(it, {
            sha256: prev.sha256,
            md5: prev.md5,
            localSha256: prev.localSha256,
            redacted: prev.redacted,
            status: 'verified',
            reason: prev.redacted ? prev.reason : 'verified by a previous run; local copy re-hashed and intact',
          });
          this.filesDone++;
          this.bytesTotal -= it.size;
          continue;
        }
      }
      todo.push(it);
    }

    // Large files one by one, small files in tar batches; a few channels in parallel.
    const big = todo.filter((f) => f.size > SMALL_FILE);
    const small = todo.filter((f) => f.size <= SMALL_FILE);
    const batches: SalvageItem[][] = [];
    let cur: SalvageItem[] = [];
    let curBytes = 0;
    for (const f of small) {
      if (cur.length && (cur.length >= BATCH_FILES || curBytes + f.size > BATCH_BYTES)) {
        batches.push(cur);
        cur = [];
        curBytes = 0;
      }
      cur.push(f);
      curBytes += f.size;
    }
    if (cur.length) batches.push(cur);
    type Job = { kind: 'one'; item: SalvageItem } | { kind: 'batch'; items: SalvageItem[] };
    const jobs: Job[] = [...big.map((item): Job => ({ kind: 'one', item })), ...batches.map((items): Job => ({ kind: 'batch', items }))];
    const onBytes = (n: number) => {
      this.bytesDone += n;
      this.progress(step, STEPS.find((s) => s.id === step)!.title);
    };
    const byPath = new Map(todo.map((i) => [i.remotePath, i]));
    const worker = async () => {
      for (;;) {
        if (this.fatal) return;
        this.checkCancel();
        const job = jobs.shift();
        if (!job) return;
        if (job.kind === 'one') {
          const r = await downloadOne(
            t,
            this.dir,
            { remotePath: job.item.remotePath, localPath: job.item.localPath!, size: job.item.size },
            onBytes,
            this.o.signal,
            { md5: !!this.o.s3 },
          );
          this.markItem(job.item, r, REDACT_KINDS.has(job.item.kind));
        } else {
          await downloadBatch(
            t,
            this.dir,
            job.items.map((i) => ({ remotePath: i.remotePath, localPath: i.localPath!, size: i.size })),
            onBytes,
            (r) => {
              const it = byPath.get(r.remotePath);
              if (it) this.markItem(it, r, REDACT_KINDS.has(it.kind));
            },
            this.o.signal,
            { md5: !!this.o.s3 },
          );
        }
      }
    };
    const n = Math.max(1, Math.min(this.o.concurrency ?? 3, 4));
    await Promise.all(Array.from({ length: n }, worker));
    this.checkCancel();
    if (this.fatal) {
      for (const it of files) if (it.status === 'pending') Object.assign(it, { status: 'failed', reason: `not attempted: ${this.fatal}` });
    }

    for (const it of gitItems) {
      this.checkCancel();
      await this.salvageGit(it);
      this.filesDone++;
    }
    const mine = [...files, ...gitItems, ...cmdItems];
    const failed = mine.filter((i) => i.status === 'failed');
    m.steps[step] = failed.length
      ? { status: 'failed', reason: `${failed.length} of ${mine.length} item(s) failed${this.fatal ? `: ${this.fatal}` : ''}` }
      : { status: 'done' };
    this.save(true);
  }

  /** `git status` and `git diff` (staged and unstaged) of a repository, as text files. */
  private async salvageGit(it: SalvageItem): Promise<void> {
    try {
      const g = await runOperation(this.o.transport, gitStateOperation(it.remotePath), this.o.signal);
      if (!g.ok) {
        it.status = 'failed';
        it.reason = g.reason;
        return;
      }
      const { status, diff } = g;
      const dirAbs = insideDest(this.dir, it.localPath!);
      const statusText = redactText(status ?? '');
      const diffText = this.o.keepSecrets ? (diff ?? '') : redactText(diff ?? '');
      ensureParent(this.dir, path.join(dirAbs, 'x'));
      writeAtomic(path.join(dirAbs, 'git-status.txt'), statusText);
      writeAtomic(path.join(dirAbs, 'git-diff.patch'), diffText);
      it.sha256 = createHash('sha256').update(statusText).update(diffText).digest('hex');
      it.size = Buffer.byteLength(statusText) + Buffer.byteLength(diffText);
      it.status = 'verified';
      it.reason = `git status and diff saved (${Buffer.byteLength(diffText)} B of diff)`;
    } catch (e) {
      it.status = 'failed';
      it.reason = errorMessage(e);
    }
    this.save();
  }

  private async runS3Step(): Promise<void> {
    const m = this.manifest;
    const s3 = this.o.s3;
    if (!s3) {
      m.steps.s3 = { status: 'skipped', reason: 'no S3 bucket configured (CLI --s3 s3://bucket/prefix, setting gpuSessions.salvage.s3)' };
      for (const it of m.items) it.s3 = 'unknown';
      this.save(true);
      return;
    }
    m.steps.s3 = { status: 'running' };
    this.progress('s3', `Checking s3://${s3.bucket}/${s3.prefix}…`);
    const { inventoryS3, matchToS3, summarizeS3 } = await import('./s3');
    let inv;
    try {
      inv = await inventoryS3(s3, { signal: this.o.signal as AbortSignal | undefined });
    } catch (e) {
      m.s3 = { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: 0, bytes: 0, error: errorMessage(e) };
      m.steps.s3 = { status: 'failed', reason: errorMessage(e) };
      for (const it of m.items) it.s3 = 'unknown';
      this.save(true);
      return;
    }
    // MD5 of files we did not download, so single-part ETags can be compared (bounded work on the node).
    const candidates = m.items.filter(
      (i) => i.localPath && i.kind !== 'git-state' && i.kind !== 'server-cmdline' && !i.md5 && i.status !== 'verified',
    );
    const pre = matchToS3(
      candidates.map((i) => ({ remotePath: i.remotePath, size: i.size })),
      inv,
      s3.mappings,
    );
    const needMd5 = candidates.filter(
      (_, k) =>
        pre[k].status === 'unverified' && pre[k].key && /^[0-9a-f]{32}$/.test(inv.objects.find((o) => o.key === pre[k].key)?.etag ?? ''),
    );
    let md5s = new Map<string, string>();
    const md5Bytes = needMd5.reduce((a, b) => a + b.size, 0);
    if (needMd5.length && md5Bytes <= 64 * 1024 * 1024 * 1024) {
      try {
        md5s = await remoteHashes(
          this.o.transport,
          needMd5.map((i) => i.remotePath),
          'md5',
          this.o.signal,
        );
      } catch (e) {
        this.log.warn(`MD5 on the node failed: ${errorMessage(e)}`);
      }
    }
    const fileItems = m.items.filter((i) => i.localPath && i.kind !== 'git-state' && i.kind !== 'server-cmdline');
    const matches = matchToS3(
      fileItems.map((i) => ({ remotePath: i.remotePath, size: i.size, md5: i.md5 ?? md5s.get(i.remotePath) ?? null })),
      inv,
      s3.mappings,
    );
    fileItems.forEach((it, k) => {
      it.s3 = matches[k].status;
      it.s3Key = matches[k].key;
    });
    const sum = summarizeS3(inv, matches);
    m.s3 = { target: `s3://${s3.bucket}/${s3.prefix}`, endpoint: s3.endpoint, objects: sum.objects, bytes: sum.bytes };
    m.steps.s3 = {
      status: 'done',
      reason: `${sum.objects} objects (${sum.bytes} B); ${sum.present} present, ${sum.unverified} size-only, ${sum.missing} missing, ${sum.mismatch} mismatched`,
    };
    this.save(true);
  }

  private async runEnvironmentStep(): Promise<void> {
    const m = this.manifest;
    m.steps.environment = { status: 'running' };
    this.progress('environment', 'Recording the environment…');
    try {
      const snap = this.o.snapshot ?? defaultSnapshot;
      const s = await snap(this.o.transport, m.node, this.o.servers ?? []);
      const jsonText = redactText(JSON.stringify(s.json, null, 2)) + '\n';
      writeAtomic(insideDest(this.dir, 'environment.json'), jsonText);
      writeAtomic(insideDest(this.dir, 'environment.md'), redactText(s.markdown));
      m.environment = { json: 'environment.json', md: 'environment.md', summary: s.summary };
      m.steps.environment = { status: 'done' };
    } catch (e) {
      m.steps.environment = { status: 'failed', reason: errorMessage(e) };
    }
    this.save(true);
  }

  private finish(): void {
    const m = this.manifest;
    const lost: SalvageManifest['lost'] = [];
    for (const it of m.items) {
      if (!it.selected) continue;
      const inS3 = it.s3 === 'present';
      if ((it.status === 'verified' && !it.changedAfterVerify) || inS3) continue;
      lost.push({ remotePath: it.remotePath, size: it.size, why: it.reason ?? it.status });
    }
    m.lost = lost;
    m.leftByChoice = m.items
      .filter((i) => !i.selected && i.kind !== 'symlink' && i.s3 !== 'present')
      .map((i) => ({ remotePath: i.remotePath, size: i.size, s3: i.s3 }));
    m.verdict = lost.length === 0 ? 'safe' : 'unsafe';
    m.finishedAt = new Date().toISOString();
    this.save(true);
    try {
      writeAtomic(insideDest(this.dir, 'SALVAGE.md'), renderSalvageReport(m));
    } catch (e) {
      this.log.error(`Could not write SALVAGE.md: ${errorMessage(e)}`);
    }
    this.progress('verdict', m.verdict === 'safe' ? 'Safe to shut down.' : `Not safe: ${lost.length} item(s) would be lost.`);
  }
}

/** Node's recursive mkdir can report ENOENT for a read-only or unwritable parent: find the real cause. */
function diagnoseWrite(dir: string, e: unknown): unknown {
  if ((e as NodeJS.ErrnoException).code !== 'ENOENT') return e;
  let p = path.dirname(dir);
  while (!existsSync(p) && path.dirname(p) !== p) p = path.dirname(p);
  try {
    mkdirSync(path.join(p, `.gs-write-test-${process.pid}`));
    rmSync(path.join(p, `.gs-write-test-${process.pid}`), { recursive: true, force: true });
  } catch (e2) {
    return e2;
  }
  return e;
}

async function defaultSnapshot(
  t: Transport,
  node: string,
  servers: SglangServer[],
): Promise<{ json: unknown; markdown: string; summary: string }> {
  const { takeSnapshot, renderSnapshotMarkdown } = await import('./snapshot');
  const s = await takeSnapshot(
    t,
    node,
    servers.map((x) => ({ pid: x.pid, port: x.port, host: x.host, enableMetrics: x.enableMetrics })),
  );
  const gpus = (s.gpus.smiQ.match(/Product Name\s*:\s*(.*)/g) ?? []).length;
  const summary = `${s.hostname ?? node}: ${s.os ?? '?'}, driver ${s.gpus.driverVersion ?? '—'}, CUDA ${s.gpus.cudaVersion ?? '—'}, ${gpus} GPU(s), Python ${s.python.version ?? '?'}, sglang ${s.keyPackages['sglang'] ?? '—'}, torch ${s.keyPackages['torch'] ?? '—'}`;
  return { json: s, markdown: renderSnapshotMarkdown(s), summary };
}

function mdCell(s: string): string {
  return s.replace(/[\u0000-\u001f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`).replace(/\|/g, '\\|');
}

export function renderSalvageReport(m: SalvageManifest): string {
  const L: string[] = [];
  L.push(`# Salvage of ${m.node}`, '');
  L.push(m.verdict === 'safe' ? `## ✅ Safe to shut down` : `## ❌ Not safe to shut down — ${m.lost.length} item(s) would be lost`, '');
  L.push(`- Started ${m.startedAt}, finished ${m.finishedAt ?? '—'}`);
  L.push(
    `- Node: ${mdCell(String(m.host.user ?? ''))}@${mdCell(String(m.host.host ?? ''))}:${m.host.port ?? ''}${m.host.hostKeyFingerprint ? ` (host key ${m.host.hostKeyFingerprint})` : ''}`,
  );
  L.push(`- Roots: ${m.roots.map((r) => '`' + r + '`').join(', ')}; size threshold ${formatBytes(m.sizeThreshold)}`);
  const verified = m.items.filter((i) => i.status === 'verified');
  L.push(`- Downloaded and verified: ${verified.length} item(s), ${formatBytes(verified.reduce((a, b) => a + b.size, 0))}`);
  if (m.s3)
    L.push(
      `- S3: ${m.s3.target}${m.s3.endpoint ? ` (${m.s3.endpoint})` : ''} — ${m.s3.error ? `error: ${m.s3.error}` : `${m.s3.objects} objects, ${formatBytes(m.s3.bytes)}`}`,
    );
  if (m.environment) L.push(`- Environment: ${m.environment.summary} — see [environment.md](environment.md)`);
  L.push('');
  L.push('## Checklist', '');
  for (const s of STEPS) {
    const st = m.steps[s.id];
    const icon = st.status === 'done' ? '✅' : st.status === 'failed' ? '❌' : st.status === 'skipped' ? '⏭️' : '…';
    L.push(`- ${icon} **${s.title}** — ${st.status}${st.reason ? `: ${mdCell(st.reason)}` : ''}`);
  }
  L.push('');
  if (m.lost.length) {
    L.push('## Would be lost', '', '| remote path | size | why |', '|---|---|---|');
    for (const l of m.lost) L.push(`| \`${mdCell(l.remotePath)}\` | ${formatBytes(l.size)} | ${mdCell(l.why)} |`);
    L.push('');
  }
  if (m.leftByChoice.length) {
    L.push('## Left on the node by choice (not selected, not in S3)', '', '| remote path | size | S3 |', '|---|---|---|');
    for (const l of m.leftByChoice.slice(0, 500)) L.push(`| \`${mdCell(l.remotePath)}\` | ${formatBytes(l.size)} | ${l.s3} |`);
    if (m.leftByChoice.length > 500) L.push(`| … ${m.leftByChoice.length - 500} more (see salvage-manifest.json) | | |`);
    L.push('');
  }
  L.push('## Items', '', '| status | kind | remote path | size | sha256 | S3 |', '|---|---|---|---|---|---|');
  for (const it of m.items.slice(0, 2000)) {
    L.push(
      `| ${it.status}${it.redacted ? ' (secrets redacted)' : ''} | ${it.kind} | \`${mdCell(it.remotePath)}\` | ${formatBytes(it.size)} | ${it.sha256 ? '`' + it.sha256.slice(0, 16) + '…`' : '—'} | ${it.s3} |`,
    );
  }
  if (m.items.length > 2000) L.push(`| … | | ${m.items.length - 2000} more items in salvage-manifest.json | | | |`);
  L.push('');
  return L.join('\n');
}
