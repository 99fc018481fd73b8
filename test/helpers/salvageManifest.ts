/** A salvage manifest and its items built in memory, for tests of the phases that read them (report, verdict). */
import { STEPS, type SalvageItem, type SalvageManifest, type StepId } from '../../src/core/salvage/salvageTypes';

export function manifestOf(items: SalvageItem[], extra: Partial<SalvageManifest> = {}): SalvageManifest {
  return {
    version: 1,
    node: 'gpu-1',
    host: {},
    startedAt: '2026-11-29T12:00:00.000Z',
    finishedAt: '2026-11-29T12:01:00.000Z',
    dest: '/tmp/x',
    roots: [{ path: '/root/out', why: 'written by a server' }],
    sizeThreshold: 256 * 1024 * 1024,
    s3: null,
    steps: Object.fromEntries(STEPS.map((s) => [s.id, { status: 'done' }])) as Record<StepId, { status: 'done' }>,
    items,
    verdict: 'safe',
    reasons: [],
    reasonDetails: [],
    writers: [],
    stopped: [],
    listing: null,
    stats: { bytesTransferred: 10, filesTransferred: 1 },
    redact: false,
    lost: [],
    leftByChoice: [],
    environment: null,
    ...extra,
  };
}

export function itemOf(remotePath: string, over: Partial<SalvageItem> = {}): SalvageItem {
  return {
    remotePath,
    localPath: 'files' + remotePath,
    kind: 'data',
    step: 'data',
    size: 10,
    mtime: '2026-11-29T12:00:00Z',
    sha256: null,
    selected: true,
    status: 'verified',
    reason: null,
    leftReason: null,
    s3: 'unknown',
    ...over,
  } as SalvageItem;
}
