/**
 * The simulated node plays a rented RunPod pod (issue 46, item 6): `RUNPOD_POD_ID` and the pod-scoped
 * `RUNPOD_API_KEY` in its environment, the `runpodctl` stand-in (bin/runpodctl) on its PATH, and the pod's state in
 * `~/.sim/provider/runpod.json`, which the stand-in answers `pod get` from and records `pod stop` / `pod delete` in.
 * After a stop or delete the stand-in stops the servers and marks the container dead: the demo's SSH server (and the
 * tests' sshd harness) then refuse new sessions, as a stopped pod's do.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import * as path from 'node:path';
import type { HomeWriter } from './homeWriter';

export type SimProviderName = 'runpod';

export interface SimPodKnobs {
  /** A stop "succeeds" (exit 0, an answer printed) while the status stays RUNNING. */
  stopKeepsRunning?: boolean;
  /** Seconds from the stop or delete to the container's end (servers stopped, SSH refused). Default 2. */
  dieAfterS?: number;
}

export interface SimPodState {
  podId: string;
  apiKey: string;
  desiredStatus: 'RUNNING' | 'EXITED' | 'TERMINATED';
  costPerHr: number;
  gpuCount: number;
  startedAt: number;
  /** The calls that changed the pod (stop, delete), with which key ran them: the pod's own, another, or none. */
  calls: Array<{ verb: 'stop' | 'delete'; id: string; key: 'pod' | 'other' | 'none'; at: number }>;
  knobs: SimPodKnobs;
  containerDead: boolean;
}

export interface SimProvider {
  name: SimProviderName;
  instanceId: string;
  /** The pod-scoped key (a made-up one; it never leaves the node in the product's output). */
  apiKey: string;
  stateFile: string;
  /** Variables the pod's environment holds. */
  env: Record<string, string>;
}

export function simPodStateFile(home: string): string {
  return path.join(home, '.sim', 'provider', 'runpod.json');
}

/** Writes the pod's state and puts the stand-in on PATH; returns what the node's environment gets. */
export function writeSimProvider(w: HomeWriter, assets: string, gpuCount: number): SimProvider {
  const h = createHash('sha256').update(`${w.home}/pod`).digest('hex');
  const podId = `gs${h.slice(0, 12)}`;
  const apiKey = `rpa_SIMPOD${h.slice(12, 40).toUpperCase()}`;
  const state: SimPodState = {
    podId,
    apiKey,
    desiredStatus: 'RUNNING',
    costPerHr: Math.round(5.99 * gpuCount * 100) / 100,
    gpuCount,
    startedAt: Math.floor(Date.now() / 1000),
    calls: [],
    knobs: { stopKeepsRunning: false, dieAfterS: 2 },
    containerDead: false,
  };
  w.file('.sim/provider/runpod.json', JSON.stringify(state, null, 2) + '\n', 0o644);
  w.copy(path.join(assets, 'bin', 'runpodctl'), 'bin/runpodctl', 0o755);
  return {
    name: 'runpod',
    instanceId: podId,
    apiKey,
    stateFile: simPodStateFile(w.home),
    env: { RUNPOD_POD_ID: podId, RUNPOD_API_KEY: apiKey, RUNPOD_GPU_COUNT: String(gpuCount) },
  };
}

/** The pod's state as the stand-in left it; null when the node plays no provider. */
export function readSimPod(home: string): SimPodState | null {
  try {
    return JSON.parse(readFileSync(simPodStateFile(home), 'utf8')) as SimPodState;
  } catch {
    return null;
  }
}

/** Sets knobs of the pod (tests: a stop that "succeeds" while the status stays RUNNING). */
export function setSimPodKnobs(home: string, knobs: SimPodKnobs): void {
  const st = readSimPod(home);
  if (!st) throw new Error(`${home} plays no RunPod pod`);
  st.knobs = { ...st.knobs, ...knobs };
  const f = simPodStateFile(home);
  writeFileSync(f + '.tmp', JSON.stringify(st, null, 2) + '\n');
  renameSync(f + '.tmp', f);
}

/** True once a stop or delete ended the container: the node refuses new SSH sessions. */
export function simContainerDead(home: string): boolean {
  return readSimPod(home)?.containerDead === true;
}
