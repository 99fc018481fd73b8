/**
 * One file written under a temporary name, hashed (SHA-256, and MD5 for S3 ETags) while it is written, and
 * renamed into place only when its hash matches the node's (or, `direct`, a new file written under its final name and
 * removed again unless its hash matches). Used on the extension host's thread (large
 * files) and in the writer thread of small-file batches (batchWriter.ts).
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fdatasync, fsyncSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import * as path from 'node:path';
import { errorMessage } from '../../util/errors';
import { ensureParent, forgetCheckedDirs, insideDest } from '../dest/paths';

export interface TransferResult {
  remotePath: string;
  ok: boolean;
  sha256: string | null;
  md5: string | null;
  remoteSha256: string | null;
  bytes: number;
  reason: string | null;
  /** Local disk problem (ENOSPC, EACCES, EROFS): stop the whole salvage. */
  fatal?: boolean;
}

/** A file not transferred, and why (`bytes`: what had arrived before it failed). */
export function failedTransfer(remotePath: string, reason: string, bytes = 0): TransferResult {
  return { remotePath, ok: false, sha256: null, md5: null, remoteSha256: null, bytes, reason };
}

/** Can a new file be made in `dir` (the run folder)? Asked only after a write failed, to tell one refused name from a
 * folder that cannot be written. */
function canWriteIn(dir: string): boolean {
  const probe = path.join(dir, `.gs-write-check-${process.pid}-${Date.now()}`);
  try {
    closeSync(openSync(probe, 'wx', 0o600));
    rmSync(probe, { force: true });
    return true;
  } catch {
    return false;
  }
}

/**
 * What a local write error means. Given the run folder, a permission or name error there that still lets a new file
 * be made is this one name being refused (a FAT or SMB destination): the item fails, the others go on.
 */
export function fsProblem(e: unknown, dest?: string): { fatal: boolean; reason: string } {
  const code = (e as NodeJS.ErrnoException).code;
  if (dest && (code === 'EACCES' || code === 'EPERM' || code === 'EINVAL' || code === 'EILSEQ') && canWriteIn(dest))
    return {
      fatal: false,
      reason: `the destination refused this file's local name (${code}) although the folder is writable; the other files go on`,
    };
  if (code === 'ENOSPC')
    return {
      fatal: true,
      reason: 'local disk full (ENOSPC): free space or choose another destination, then run salvage again; verified files are kept',
    };
  if (code === 'EACCES' || code === 'EPERM')
    return { fatal: true, reason: `destination not writable (${code}): choose a folder you can write to` };
  if (code === 'EROFS') return { fatal: true, reason: 'destination is on a read-only file system (EROFS)' };
  if (code === 'EDQUOT') return { fatal: true, reason: 'disk quota exceeded (EDQUOT)' };
  return { fatal: false, reason: errorMessage(e) };
}

/**
 * A durable file starts flushing its written bytes to disk every this many bytes (write-behind), on a thread of libuv's
 * pool while the next bytes arrive, so that the fsync a large file needs before it counts as salvaged finds little
 * left to write (it was ~0.5 s at the end of a 512 MiB file, all of it dirty: nothing else had flushed it).
 */
export const WRITE_BEHIND_BYTES = 32 * 1024 * 1024;

/**
 * Start flushing `file`'s written bytes to disk, on a descriptor of its own (closed when the flush ends, so a
 * descriptor number its writer frees is never synced by mistake once reused); `done` runs then. Only an early start:
 * the writer's own fsync is still what makes the file durable, and a failure here (a system that refuses to sync a
 * read-only descriptor) changes nothing. False when it could not start.
 */
export function flushBehind(file: string, done: () => void): boolean {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0));
  } catch {
    return false;
  }
  fdatasync(fd, () => {
    try {
      closeSync(fd);
    } catch {
      /* already gone */
    }
    done();
  });
  return true;
}

/** Writes one file: temp name, hashes on the fly, rename after verification. */
export class VerifiedWriter {
  private fd: number | null = null;
  /** Durable files: bytes written since the last write-behind flush started, and whether one is running. */
  private unflushed = 0;
  private flushing = false;
  private readonly sha = createHash('sha256');
  /** MD5 only when S3 ETags will be compared (it costs CPU on the hot path). */
  private readonly md5: ReturnType<typeof createHash> | null;
  bytes = 0;
  readonly abs: string;
  readonly tmp: string;
  error: unknown = null;

  constructor(
    readonly dest: string,
    rel: string,
    withMd5: boolean,
    private readonly durable: boolean,
    /**
     * A new file is written under its final name (no rename; removed again if it does not verify); the temporary
     * name only when it would replace an existing file (whose verified bytes stay until the new ones verify).
     */
    direct = false,
  ) {
    this.md5 = withMd5 ? createHash('md5') : null;
    this.abs = '';
    this.tmp = '';
    try {
      this.abs = insideDest(dest, rel);
      ensureParent(dest, this.abs);
      if (direct) {
        try {
          this.fd = openSync(this.abs, 'wx', 0o644);
          this.tmp = this.abs;
          return;
        } catch (e) {
          // EEXIST: replaces a file (temporary name below); ENOENT: the folder vanished (below, again)
          if ((e as NodeJS.ErrnoException).code !== 'EEXIST' && (e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        }
      }
      this.tmp = insideDest(dest, rel + '.gs-partial');
      try {
        this.fd = openSync(this.tmp, 'w', 0o644);
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
        // The folder vanished since we checked it (someone cleaned up): check and create again.
        forgetCheckedDirs();
        ensureParent(dest, this.abs);
        this.fd = openSync(this.tmp, 'w', 0o644);
      }
    } catch (e) {
      this.error = e;
    }
  }

  /** Take the hashes and byte count of a transfer that wrote the temporary file itself (parallel ranges). */
  adopt(p: { sha256: string | null; md5: string | null; bytes: number; fsError?: unknown }): this {
    this.external = { sha256: p.sha256 ?? '', md5: p.md5 };
    this.bytes = p.bytes;
    this.error ??= p.fsError ?? null;
    return this;
  }
  private external: { sha256: string; md5: string | null } | null = null;

  write(chunk: Buffer): void {
    this.sha.update(chunk);
    this.md5?.update(chunk);
    this.bytes += chunk.length;
    if (this.error || this.fd === null) return;
    try {
      let off = 0;
      while (off < chunk.length) off += writeSync(this.fd, chunk, off, chunk.length - off);
    } catch (e) {
      this.error = e;
      return;
    }
    if (!this.durable) return;
    this.unflushed += chunk.length;
    if (this.unflushed >= WRITE_BEHIND_BYTES && !this.flushing) this.writeBehind();
  }

  /** Start flushing what is written so far (flushBehind); one flush at a time. */
  private writeBehind(): void {
    this.unflushed = 0;
    this.flushing = flushBehind(this.tmp, () => (this.flushing = false));
  }

  /**
   * Close the temporary file (all bytes written; an error is kept for finish()). Large files are flushed to
   * disk before they count as salvaged; small ones rely on the file system's rename ordering (fsync per file
   * would dominate thousands of small files).
   */
  close(): void {
    if (this.fd === null) return;
    if (this.durable) {
      try {
        fsyncSync(this.fd);
      } catch (e) {
        this.error ??= e;
      }
    }
    try {
      closeSync(this.fd);
    } catch (e) {
      this.error ??= e;
    }
    this.fd = null;
  }

  /** The SHA-256 of what was received, before finish() (finish consumes the digest). */
  peekSha(): string {
    return this.sha.copy().digest('hex');
  }

  /** Close and, when the hash matches, move into place. */
  finish(expectedSha: string | null, expectedSize: number | null): TransferResult & { localPath?: string } {
    const sha256 = this.external?.sha256 ?? this.sha.digest('hex');
    const md5 = this.external ? this.external.md5 : this.md5 ? this.md5.digest('hex') : null;
    const base = { sha256, md5, remoteSha256: expectedSha, bytes: this.bytes };
    this.close();
    if (this.error) {
      this.discard();
      const p = fsProblem(this.error, this.dest);
      return { ...base, remotePath: '', ok: false, reason: p.reason, fatal: p.fatal };
    }
    if (!expectedSha) {
      this.discard();
      return { ...base, remotePath: '', ok: false, reason: 'the node did not report a SHA-256 for this file (unreadable or vanished)' };
    }
    if (expectedSha !== sha256) {
      this.discard();
      const changed = expectedSize !== null && expectedSize !== this.bytes;
      return {
        ...base,
        remotePath: '',
        ok: false,
        reason: changed
          ? `changed on the node during the transfer (listed ${expectedSize} B, received ${this.bytes} B); run salvage again`
          : 'SHA-256 mismatch between the node and the received bytes (the file changed during the transfer?); run salvage again',
      };
    }
    try {
      if (this.tmp !== this.abs) renameSync(this.tmp, this.abs);
    } catch (e) {
      this.discard();
      const p = fsProblem(e, this.dest);
      return { ...base, remotePath: '', ok: false, reason: p.reason, fatal: p.fatal };
    }
    return { ...base, remotePath: '', ok: true, reason: null };
  }

  discard(): void {
    if (this.fd !== null) {
      try {
        closeSync(this.fd);
      } catch {
        /* ignore */
      }
      this.fd = null;
    }
    if (this.tmp) rmSync(this.tmp, { force: true });
  }
}
