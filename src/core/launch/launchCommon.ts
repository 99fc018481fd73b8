/**
 * Shared by the launch steps: the launch folder on the node, the readiness text, a cancellable sleep.
 */
import { GpuSessionsError } from '../util/errors';
import { newNonce } from '../remote/sections';
import { AbortLike } from '../ssh/transport';

export const LAUNCH_DIR = '.gpu-sessions/launch';
export const READY_TEXT = 'The server is fired up and ready to roll';

export const sleep = (ms: number, signal?: AbortLike) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(new GpuSessionsError('cancelled', 'Cancelled.'));
    const onAbort = () => {
      clearTimeout(timer);
      reject(new GpuSessionsError('cancelled', 'Cancelled.'));
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export const nonce = newNonce;
