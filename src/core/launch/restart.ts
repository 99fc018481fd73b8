/**
 * Restart a running server: capture its exact command line (argv, interpreter/venv, launch-relevant
 * environment, GPU, log file) as a one-server profile, stop it (optionally after draining), then launch
 * that profile and wait until it is ready again.
 */
import { GpuSessionsError } from '../util/errors';
import type { AbortLike, Transport } from '../ssh/transport';
import { LaunchProgress, LaunchResult, StopResult, launch, scanServers, serverSecretEnv, stopServer } from './launch';
import { captureProfile } from './profile';

interface RestartOptions {
  port: number;
  drain?: boolean;
  drainTimeoutMs?: number;
  readyTimeoutMs?: number;
  signal?: AbortLike;
  onProgress?: (message: string) => void;
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
  if (!srv) throw new GpuSessionsError('usage', `No SGLang server of this account listens on port ${o.port} on ${t.label}.`);
  const cap = captureProfile([srv], {
    virtualEnv: { [srv.pid]: srv.virtualEnv ?? undefined },
    env: { [srv.pid]: srv.env },
    secretEnv: { [srv.pid]: srv.secretEnv },
  });
  // The same secrets again, from memory: the values seen in its argv and environment.
  const envSecrets = serverSecretEnv(srv.pid);
  const secretOf = (name: string) => {
    const c = cap.secrets.find((x) => x.name === name);
    if (!c) return undefined;
    return c.what.startsWith('env ') ? envSecrets[c.what.slice(4)] : c.value;
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
