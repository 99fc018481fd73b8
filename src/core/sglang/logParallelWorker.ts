/** A worker thread of `parse-log --summary` (logParallel.ts): summarizes one piece of a file and posts it back. */
import { closeSync, openSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';
import { summarizePiece } from './logParallel';

const { file, start, end } = workerData as { file: string; start: number; end: number };
try {
  const fd = openSync(file, 'r');
  try {
    const r = summarizePiece(fd, start, end);
    const transfer = Object.values(r.values).flatMap((v) => [v.gen.buffer as ArrayBuffer, v.accept.buffer as ArrayBuffer]);
    parentPort!.postMessage(r, transfer);
  } finally {
    closeSync(fd);
  }
} catch (e) {
  parentPort!.postMessage({ error: (e as Error).message });
}
