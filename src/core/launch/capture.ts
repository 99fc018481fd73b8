/**
 * The capture flow both faces run (`gpu-sessions capture`, VS Code's "Save Running Servers as Profile"): read the
 * node's SGLang servers, keep this account's own (the only ones that can be relaunched from here), and turn them
 * into one profile file's text with what needs the user's attention. The faces only choose the file and say it.
 */
import type { AbortLike, Transport } from '../ssh/transport';
import { ScannedServer, scanServers } from './launch';
import { CaptureResult, captureProfile, profileToJson, validateProfile } from './profile';

interface CaptureCandidates {
  /** This account's servers (every server when the SSH user is root or the uid is unknown), after the port filter. */
  servers: ScannedServer[];
  /** Servers running on the node that are not taken (other users', other ports). */
  others: number;
}

/** The node's servers a capture can take: this account's own, only on `ports` when given. */
export async function captureCandidates(
  t: Transport,
  ports?: number[],
  signal?: AbortLike,
  /** Skip other users' processes on the node (restore's capture): `others` is then 0. */
  ownOnly = false,
): Promise<CaptureCandidates> {
  const scan = await scanServers(t, signal, ownOnly);
  let servers = scan.servers.filter((s) => scan.ownUid === null || scan.ownUid === 0 || s.uid === scan.ownUid);
  if (ports?.length) servers = servers.filter((s) => ports.includes(s.port));
  return { servers, others: scan.servers.length - servers.length };
}

interface CapturedProfile extends CaptureResult {
  /** The profile file's text. */
  json: string;
  /** What the profile needs edited before it launches (from the profile validator). */
  errors: string[];
  /** Ports of the servers the profile reproduces. */
  ports: number[];
}

/** A profile name from the file the user chose (`my-run.json` → `my-run`), when it is a valid one. */
export function profileNameFromFile(fileBase: string): string | undefined {
  const name = fileBase.replace(/\.json$/i, '');
  return /^[A-Za-z0-9][A-Za-z0-9._ -]{0,79}$/.test(name) ? name : undefined;
}

/** Servers → profile text, with the captured servers' environments and secret references. Throws when none is SGLang. */
export function captureServersAsProfile(servers: ScannedServer[], fileBase: string): CapturedProfile {
  const res = captureProfile(servers, {
    name: profileNameFromFile(fileBase),
    virtualEnv: Object.fromEntries(servers.map((s) => [s.pid, s.virtualEnv ?? undefined])),
    env: Object.fromEntries(servers.map((s) => [s.pid, s.env])),
    secretEnv: Object.fromEntries(servers.map((s) => [s.pid, s.secretEnv])),
  });
  const json = profileToJson(res.groups);
  return {
    ...res,
    json,
    errors: validateProfile(JSON.parse(json)).errors,
    ports: servers.filter((s) => res.captured.includes(s.pid)).map((s) => s.port),
  };
}
