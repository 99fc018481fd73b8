/**
 * The messages between the coordinator (parallel.ts, batchWriter.ts) and the worker threads
 * (parallelWorker.ts), in one file both sides import, so neither side imports the other for its types.
 */
import type { SshConnectRecipe } from '../../ssh/transport';
import type { SecretHit } from './secretScan';
import type { TransferResult } from './verifiedWriter';

export type WorkerInit =
  | { role: 'fetch'; recipe: SshConnectRecipe; remotePath: string; tmp: string }
  | { role: 'hash'; tmp: string; md5: boolean }
  | { role: 'write'; dest: string; md5: boolean; scanLimit: number }
  | { role: 'ping' };

/** Coordinator → fetch worker. */
export type FetchCommand = { type: 'piece'; id: number; off: number; len: number } | { type: 'stop' };
/** Fetch worker → coordinator. `got` counts bytes written from `off` of the request. */
export type FetchEvent =
  | { type: 'ready' }
  | { type: 'fatal'; code: string; message: string }
  | { type: 'bytes'; id: number; got: number }
  | { type: 'done'; id: number; got: number }
  | { type: 'failed'; id: number; got: number; retry: boolean; message: string; fsCode?: string };
export type HashCommand = { type: 'upto'; n: number } | { type: 'finish'; n: number };
export type HashEvent =
  { type: 'digest'; sha256: string; md5: string | null; bytes: number } | { type: 'error'; message: string; code?: string };

/** Open `id` at `rel` (relative to dest) | bytes [off, off+len) of the chunk belong to `id` | `id` is complete. */
export type BatchOp = ['o', number, string] | ['d', number, number, number] | ['e', number];

/** A file whose bytes are all written (and closed): what it hashed to, and whether writing it failed. */
export interface EndedFile {
  id: number;
  sha256: string;
  bytes: number;
  /** Writing it failed (the reason comes with commit); `fatal`: the destination cannot take more files. */
  failed: boolean;
  fatal: boolean;
}

export interface CommittedFile {
  id: number;
  result: TransferResult;
  /** Secrets found in the exact bytes (scanned where they were written); undefined: not scanned there. */
  secrets?: SecretHit[];
}

/** Messages of the `write` role. */
export type WriteCommand =
  | { type: 'chunk'; buf: Uint8Array; ops: BatchOp[] }
  | { type: 'commit'; seq: number; items: Array<{ id: number; sha256: string | null }> }
  | { type: 'discard'; ids: number[] }
  | { type: 'stop' };
export type WriteEvent = { type: 'ended'; ack: number; ended: EndedFile[] } | { type: 'committed'; seq: number; results: CommittedFile[] };
