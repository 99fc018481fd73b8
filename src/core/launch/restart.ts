/**
 * Restart a running server: capture its exact command line (argv, interpreter/venv, launch-relevant
 * environment, GPU, log file) as a one-server profile, stop it (optionally after draining), then launch
 * that profile and wait until it is ready again.
 *
 * A server that crashed has no process left to capture: with `captured` (the server as the probe saw it while it
 * was alive: its argv, GPUs, log file) and nothing of this account on the port, that command line is launched
 * again (a crashed server had no way back).
 */
import { GpuSessionsError } from '../util/errors';
import type { SglangServer } from '../sglang/serverArgv';
import type { AbortLike, Transport } from '../ssh/transport';
import { LaunchProgress, LaunchResult, StopResult, launch, scanServers, serverSecretEnv, stopServer } from './launch';
import { CaptureExtras, captureProfile } from './profile';

interface RestartOptions {
  port: number;
  drain?: boolean;
  drainTimeoutMs?: number;
  readyTimeoutMs?: number;
  signal?: AbortLike;
  onProgress?: (message: string) => void;
  /** The server as seen while it was alive (a crashed one): launched again when nothing listens on the port. */
  captured?: SglangServer;
}

interface RestartResult {
  stop: StopResult;
  launch: LaunchResult | null;
  message: string;
}

export async function restartServer(t: Transport, o: RestartOptions): Promise<RestartResult> {
  const say = (m: string) => o.onProgress?.(m);
  say(`capturing the server on port ${o.port}…`);
  const scan = await scanServers(t, o.signal);
  const own = scan.servers.filter((s) => scan.ownUid === null || scan.ownUid === 0 || s.uid === scan.ownUid);
  const srv = own.find((s) => s.port === o.port);
  if (!srv && o.captured && o.captured.port === o.port) {
    // gone (crashed): nothing to stop, its command line from when it ran
    const stop = goneStop(o.port, o.captured.pid);
    return relaunch(t, o, o.captured, {}, stop, say);
  }
  if (!srv) throw new GpuSessionsError('usage', `No SGLang server of this account listens on port ${o.port} on ${t.label}.`);
  const extras: CaptureExtras = {
    virtualEnv: { [srv.pid]: srv.virtualEnv ?? undefined },
    env: { [srv.pid]: srv.env },
    secretEnv: { [srv.pid]: srv.secretEnv },
  };
  const stop = await stopServer(t, {
    port: o.port,
    pid: srv.pid,
    drain: o.drain,
    drainTimeoutMs: o.drainTimeoutMs,
    signal: o.signal,
    onProgress: say,
  });
  if (!stop.stopped) return { stop, launch: null, message: `Not restarted: ${stop.message}` };
  return relaunch(t, o, srv, extras, stop, say);
}

/** What "stopping" a server that is already gone amounts to. */
function goneStop(port: number, pid: number): StopResult {
  return {
    port,
    pid,
    found: false,
    stopped: true,
    signal: null,
    group: false,
    drain: null,
    durationMs: 0,
    message: `the server on port ${port} (pid ${pid}) was no longer running`,
  };
}

/** Launches the captured command line of `srv` again and waits until it is ready. */
async function relaunch(
  t: Transport,
  o: RestartOptions,
  srv: SglangServer,
  extras: CaptureExtras,
  stop: StopResult,
  say: (m: string) => void,
): Promise<RestartResult> {
  const cap = captureProfile([srv], extras);
  // The same secrets again, from memory: the values seen in its argv and environment.
  const envSecrets = serverSecretEnv(srv.pid);
  const secretOf = (name: string) => {
    const c = cap.secrets.find((x) => x.name === name);
    if (!c) return undefined;
    return c.what.startsWith('env ') ? envSecrets[c.what.slice(4)] : c.value;
  };
  say('starting it again…');
  const res = await launch(t, cap.groups, {
    secrets: secretOf,
    // Its GPUs were just freed; their memory may take a moment to show as released.
    override: true,
    timeoutMs: o.readyTimeoutMs,
    signal: o.signal,
    onProgress: (p: LaunchProgress) => say(p.message),
    fallbackName: `restart-${o.port}`,
  });
  const inst = res.instances[0];
  const message =
    res.outcome === 'ready'
      ? `Restarted port ${o.port} (pid ${srv.pid} → ${inst?.pid ?? '?'}); ready.`
      : `Port ${o.port} was stopped but did not come back (${res.outcome}): ${inst?.error ?? res.preflight.refusals.map((r) => r.message).join('; ')}`;
  return { stop, launch: res, message };
}
