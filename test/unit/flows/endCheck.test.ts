/**
 * end-rental's checks (issue 46 items 2 and 4) on recorded salvages: which verdicts it refuses and why, what makes a
 * verdict stale (a new or grown file, a writer, other servers, a reboot), and what a node without the action offers.
 */
import { strict as assert } from 'node:assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import type { ProbeResult } from '../../../src/core/node/probe';
import type { ProviderInfo } from '../../../src/core/provider/detect';
import { LatestSalvage, latestSalvage, providerRefusal, staleness, verdictRefusals } from '../../../src/core/flows/endCheck';
import { endRentalExitCode } from '../../../src/core/flows/endRental';
import type { SalvageListing } from '../../../src/core/salvage/plan/listing';
import type { SalvageItem, SalvageManifest } from '../../../src/core/salvage/salvageTypes';
import { newManifest } from '../../../src/core/salvage/manifestSchema';

const item = (remotePath: string, size: number, extra: Partial<SalvageItem> = {}): SalvageItem =>
  ({
    remotePath,
    localPath: `files${remotePath}`,
    kind: 'data',
    step: 'data',
    size,
    mtime: '2026-12-04T10:00:00Z',
    sha256: 'x',
    selected: true,
    status: 'verified',
    reason: null,
    leftReason: null,
    s3: 'unknown',
    ...extra,
  }) as SalvageItem;

function manifest(extra: Partial<SalvageManifest> = {}): SalvageManifest {
  return {
    ...newManifest({
      node: 'n1',
      host: {},
      startedAt: '2026-12-04T10:00:00Z',
      finishedAt: '2026-12-04T10:05:00Z',
      dest: '/x',
      sizeThreshold: 1,
      stepStatus: 'done',
    }),
    roots: [{ path: '/home/u', why: 'home' }],
    items: [item('/home/u/out.jsonl', 100), item('/home/u/big.bin', 9e9, { selected: false, status: 'skipped', leftReason: 'large' })],
    verdict: 'safe',
    leftByChoice: [{ remotePath: '/home/u/big.bin', size: 9e9, s3: 'unknown' }],
    ...extra,
  };
}

const probe = (servers: Array<{ port: number; pid: number }> = [], uptimeS = 3600): ProbeResult =>
  ({ servers, uptimeS, probedAt: '2026-12-04T10:10:00Z' }) as unknown as ProbeResult;
const listing = (files: Array<{ path: string; size: number; mtime?: string }>, writers: number[] = []): SalvageListing =>
  ({
    files: files.map((f) => ({ kind: 'data', mtime: '2026-12-04T10:00:00Z', ...f })),
    writers: writers.map((pid) => ({ pid, argv: ['python3'], server: false, writes: [] })),
    truncated: false,
  }) as unknown as SalvageListing;

describe('end-rental checks', () => {
  let dir = '';
  beforeEach(() => (dir = mkdtempSync(path.join(tmpdir(), 'gs-endcheck-'))));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  const withSnapshot = (m: SalvageManifest, snap: Record<string, unknown>): LatestSalvage => {
    const run = path.join(dir, 'n1', '20261204-100000');
    mkdirSync(run, { recursive: true });
    writeFileSync(
      path.join(run, 'salvage-manifest.json'),
      JSON.stringify({ ...m, environment: { json: 'environment.json', md: '', summary: '' } }),
    );
    writeFileSync(path.join(run, 'environment.json'), JSON.stringify(snap));
    return latestSalvage(dir, 'n1')!;
  };

  it('no salvage, an unsafe one, unique weights, failed uploads: each a reason with a sentence', () => {
    assert.equal(latestSalvage(dir, 'n1'), null);
    const none = verdictRefusals('n1', dir, null, 'stop');
    assert.deepEqual(
      none.map((r) => r.code),
      ['no-safe-verdict'],
    );
    assert.match(none[0].message, /salvage it first \(gpu-sessions salvage n1 --dest .* --stop-servers\)/);
    const unsafe = manifest({
      verdict: 'unsafe',
      reasons: ['unique-weights'],
      reasonDetails: [{ code: 'unique-weights', message: 'weights of unknown origin would be left on the node: /m (1 file(s))' }],
      uploads: [{ remotePath: '/home/u/a', s3Object: 'k', ok: false, parts: 1, bytes: 1, reason: 'HTTP 403' }],
    });
    const r = verdictRefusals('n1', dir, { dir: '/d', manifest: unsafe }, 'stop');
    assert.deepEqual(
      r.map((x) => x.code),
      ['no-safe-verdict', 'unique-weights', 'uploads-incomplete'],
    );
    assert.match(r[2].message, /HTTP 403/);
    assert.deepEqual(verdictRefusals('n1', dir, { dir: '/d', manifest: manifest() }, 'stop'), []);
  });

  it('--terminate also needs every item of value verified: a large file left by choice refuses it', () => {
    const r = verdictRefusals('n1', dir, { dir: '/d', manifest: manifest() }, 'terminate');
    assert.deepEqual(
      r.map((x) => x.code),
      ['items-not-verified'],
    );
    assert.match(r[0].message, /\/home\/u\/big\.bin/);
  });

  it('stale: a new file, a grown one, a writer, other servers, a reboot; unchanged is fresh', () => {
    const s = withSnapshot(manifest(), {
      takenAt: '2026-12-04T10:05:00Z',
      uptimeS: 3300,
      servers: [{ port: 30000, pid: 7, alive: false }],
    });
    const same = listing([
      { path: '/home/u/out.jsonl', size: 100 },
      { path: '/home/u/big.bin', size: 9e9 },
    ]);
    assert.equal(staleness(s, probe(), same), null);
    const grown = staleness(
      s,
      probe(),
      listing(
        [
          { path: '/home/u/out.jsonl', size: 180 },
          { path: '/home/u/new.log', size: 5 },
        ],
        [42],
      ),
    );
    assert.equal(grown?.code, 'verdict-stale');
    assert.match(grown!.message, /1 new file\(s\) under the salvaged folders \(\/home\/u\/new\.log\)/);
    assert.match(grown!.message, /1 file\(s\) grew or were rewritten \(\/home\/u\/out\.jsonl\)/);
    assert.match(grown!.message, /1 process\(es\) write under the folders \(pid 42\)/);
    assert.match(
      staleness(s, probe([{ port: 30000, pid: 99 }]), same)!.message,
      /the servers changed \(now :30000 \(pid 99\); at the verdict none\)/,
    );
    assert.match(staleness(s, probe([], 60), same)!.message, /rebooted/);
  });

  it('stale: a damaged environment.json is named (file and field), never read as "no servers then"', () => {
    const s = withSnapshot(manifest(), { takenAt: '2026-12-04T10:05:00Z', uptimeS: 3300, servers: [{ port: '30000', pid: 7 }] });
    const same = listing([
      { path: '/home/u/out.jsonl', size: 100 },
      { path: '/home/u/big.bin', size: 9e9 },
    ]);
    const r = staleness(s, probe(), same);
    assert.equal(r?.code, 'verdict-stale');
    const file = path.join(s.dir, 'environment.json');
    assert.ok(r!.message.includes(`${file}: servers[0].port: expected a number, got the string "30000"`), r!.message);
    assert.doesNotMatch(r!.message, /recorded none/);
  });

  it('no action on the node: what to do instead (shutdown with its caveat, or the console)', () => {
    const rp: ProviderInfo = { name: 'runpod', instanceId: 'p1', evidence: [], actions: ['terminate'] };
    assert.equal(providerRefusal(rp, 'terminate'), null);
    assert.match(providerRefusal(rp, 'stop')!.message, /network volume cannot be stopped, only terminated\): use --terminate/);
    const az: ProviderInfo = { name: 'azure', instanceId: null, evidence: [], actions: ['shutdown'] };
    assert.match(providerRefusal(az, 'stop')!.message, /use --shutdown \(Azure keeps billing/);
    const unknown = providerRefusal({ name: 'unknown', instanceId: null, evidence: [], actions: [] }, 'shutdown')!;
    assert.equal(unknown.code, 'no-provider-action');
    assert.match(unknown.message, /sudo -n.*end it in the provider's console/);
  });

  it('exit codes: ended and dry run 0, refused 5, not verified or declined 1', () => {
    const r = (outcome: string) => endRentalExitCode({ outcome } as never);
    assert.deepEqual(['ended', 'dry-run', 'refused', 'not-verified', 'declined'].map(r), [0, 0, 5, 1, 1]);
  });
});
