/**
 * The simulated node plays a rented RunPod pod or Vast.ai instance. A pod: `RUNPOD_POD_ID` and the
 * pod-scoped `RUNPOD_API_KEY` in its environment, the `runpodctl` stand-in (bin/runpodctl) on its PATH, and the pod's
 * state in `~/.sim/provider/runpod.json`, which the stand-in answers `pod get` from and records `pod stop` /
 * `pod delete` in. An instance: `CONTAINER_ID`, `VAST_CONTAINERLABEL`, `CONTAINER_API_KEY`, the `vastai` stand-in
 * and `~/.sim/provider/vast.json`. After a stop or delete the stand-in stops the servers and marks the container
 * dead: the demo's SSH server (and the tests' sshd harness) then refuse new sessions, as a stopped pod's do.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import * as path from 'node:path';
import type { HomeWriter } from './homeWriter';

type SimProviderName = 'runpod' | 'vast';

interface SimPodKnobs {
  /** A stop "succeeds" (exit 0, an answer printed) while the status stays RUNNING. */
  stopKeepsRunning?: boolean;
  /** Seconds from the stop or delete to the container's end (servers stopped, SSH refused). Default 2. */
  dieAfterS?: number;
}

/** One stop or delete (Vast: destroy), and which key ran it: the node's own ('pod', 'instance'), another, none. */
interface SimProviderCall {
  verb: 'stop' | 'delete';
  id: string;
  key: 'pod' | 'instance' | 'other' | 'none';
  at: number;
}

/** `~/.sim/provider/vast.json`: the instance as `vastai show instance --raw` reports it. */
interface SimVastState {
  instanceId: string;
  apiKey: string;
  actual_status: string;
  intended_status: string;
  cur_state: string;
  dph_total: number;
  start_date: number;
  end_date: number;
  gpuCount: number;
  calls: SimProviderCall[];
  knobs: SimPodKnobs;
  containerDead: boolean;
}

interface SimPodState {
  podId: string;
  apiKey: string;
  desiredStatus: 'RUNNING' | 'EXITED' | 'TERMINATED';
  costPerHr: number;
  gpuCount: number;
  startedAt: number;
  /** The calls that changed the pod (stop, delete), with which key ran them: the pod's own, another, or none. */
  calls: SimProviderCall[];
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

function simProviderStateFile(home: string, name: SimProviderName = 'runpod'): string {
  return path.join(home, '.sim', 'provider', `${name}.json`);
}

/** Writes the pod's (or instance's) state and puts its stand-in on PATH; returns what the node's environment gets. */
export function writeSimProvider(w: HomeWriter, assets: string, gpuCount: number, name: SimProviderName = 'runpod'): SimProvider {
  const h = createHash('sha256').update(`${w.home}/${name}`).digest('hex');
  const now = Math.floor(Date.now() / 1000);
  const knobs: SimPodKnobs = { stopKeepsRunning: false, dieAfterS: 2 };
  if (name === 'vast') {
    const id = String(30_000_000 + (parseInt(h.slice(0, 8), 16) % 9_000_000));
    const apiKey = h.slice(8, 40);
    const state: SimVastState = {
      instanceId: id,
      apiKey,
      actual_status: 'running',
      intended_status: 'running',
      cur_state: 'running',
      dph_total: Math.round(3.41 * gpuCount * 1000) / 1000,
      start_date: now,
      end_date: now + 3 * 86_400,
      gpuCount,
      calls: [],
      knobs,
      containerDead: false,
    };
    w.file('.sim/provider/vast.json', JSON.stringify(state, null, 2) + '\n', 0o644);
    w.copy(path.join(assets, 'bin', 'vastai'), 'bin/vastai', 0o755);
    return {
      name,
      instanceId: id,
      apiKey,
      stateFile: simProviderStateFile(w.home, name),
      env: { CONTAINER_ID: id, VAST_CONTAINERLABEL: `C.${id}`, CONTAINER_API_KEY: apiKey, GPU_COUNT: String(gpuCount) },
    };
  }
  const podId = `gs${h.slice(0, 12)}`;
  const apiKey = `rpa_SIMPOD${h.slice(12, 40).toUpperCase()}`;
  const state: SimPodState = {
    podId,
    apiKey,
    desiredStatus: 'RUNNING',
    costPerHr: Math.round(5.99 * gpuCount * 100) / 100,
    gpuCount,
    startedAt: now,
    calls: [],
    knobs,
    containerDead: false,
  };
  w.file('.sim/provider/runpod.json', JSON.stringify(state, null, 2) + '\n', 0o644);
  w.copy(path.join(assets, 'bin', 'runpodctl'), 'bin/runpodctl', 0o755);
  return {
    name,
    instanceId: podId,
    apiKey,
    stateFile: simProviderStateFile(w.home, name),
    env: { RUNPOD_POD_ID: podId, RUNPOD_API_KEY: apiKey, RUNPOD_GPU_COUNT: String(gpuCount) },
  };
}

function readState<T>(home: string, name: SimProviderName): T | null {
  try {
    return JSON.parse(readFileSync(simProviderStateFile(home, name), 'utf8')) as T;
  } catch {
    return null;
  }
}

/** The pod's state as the stand-in left it; null when the node plays no pod. */
export function readSimPod(home: string): SimPodState | null {
  return readState<SimPodState>(home, 'runpod');
}

/** The Vast instance's state as the stand-in left it; null when the node plays none. */
export function readSimVast(home: string): SimVastState | null {
  return readState<SimVastState>(home, 'vast');
}

/** Sets knobs of the pod or instance (tests: a stop that "succeeds" while it keeps running). */
export function setSimPodKnobs(home: string, knobs: SimPodKnobs): void {
  const name: SimProviderName | null = readSimPod(home) ? 'runpod' : readSimVast(home) ? 'vast' : null;
  if (!name) throw new Error(`${home} plays no provider`);
  const st = readState<{ knobs: SimPodKnobs }>(home, name)!;
  st.knobs = { ...st.knobs, ...knobs };
  const f = simProviderStateFile(home, name);
  writeFileSync(f + '.tmp', JSON.stringify(st, null, 2) + '\n');
  renameSync(f + '.tmp', f);
}

/** True once a stop or delete ended the container: the node refuses new SSH sessions. */
export function simContainerDead(home: string): boolean {
  return readSimPod(home)?.containerDead === true || readSimVast(home)?.containerDead === true;
}
