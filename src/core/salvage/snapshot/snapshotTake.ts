/**
 * Taking the snapshot: the one-exec operation, then each server HTTP endpoints through the pooled SSH connection.
 */
import { errorMessage } from '../../util/errors';
import { METRICS_MAX_BYTES, fetchServerInfo, httpGet } from '../../sglang/endpoints';
import { NO_HTTP_PORT, SglangServer, httpPortOf } from '../../sglang/serverArgv';
import { RemoteOperation, runOperation } from '../../remote/operation';
import { sectionedOperation } from '../../remote/sections';
import { redactText, redactValue, scrubKnownSecrets } from '../../util/redact';
import { Transport } from '../../ssh/transport';
import { EnvSnapshot, SnapshotCore } from './snapshotTypes';
import { buildSnapshotScript } from './snapshotScript';
import { API_KEYS, RAW_SECRETS, parseSnapshotOutput } from './snapshotParse';

export function snapshotOperation(nodeName: string, serverPids: number[]): RemoteOperation<SnapshotCore> {
  return sectionedOperation({
    name: 'snapshot',
    what: 'The environment snapshot',
    node: nodeName,
    script: (nonce) => buildSnapshotScript(nonce, serverPids),
    parse: (text, nonce) => parseSnapshotOutput(nodeName, text, nonce, serverPids),
    timeoutMs: 180_000,
    maxOutputBytes: 64 * 1024 * 1024,
    cleanStderr: redactText,
  });
}

function sshDetails(t: Transport): EnvSnapshot['ssh'] {
  const d = t.describe();
  const str = (k: string) => (typeof d[k] === 'string' && d[k] !== '' ? (d[k] as string) : undefined);
  const out: EnvSnapshot['ssh'] = {};
  if (str('host')) out.host = str('host');
  if (typeof d.port === 'number') out.port = d.port;
  if (str('user')) out.user = str('user');
  if (str('hostKeyFingerprint')) out.hostKeyFingerprint = str('hostKeyFingerprint');
  if (str('hostKeyType')) out.hostKeyType = str('hostKeyType');
  if (str('proxyJump')) out.proxyJump = str('proxyJump');
  if (str('transport')) out.transport = str('transport');
  return out;
}

/**
 * The whole snapshot: the remote script, then /server_info and /metrics of every server through the
 * pooled connection, SSH details from the transport. Everything is redacted; repeats of secret values
 * found by name (environment, --api-key) are scrubbed wherever they appear.
 */
export async function takeSnapshot(
  t: Transport,
  nodeName: string,
  servers: Array<{ pid: number; port: number; host: string; enableMetrics?: boolean; grpcMode?: boolean; flags?: SglangServer['flags'] }>,
): Promise<EnvSnapshot> {
  const core = await runOperation(
    t,
    snapshotOperation(
      nodeName,
      servers.map((s) => s.pid),
    ),
  );
  const rawSecrets = RAW_SECRETS.get(core) ?? [];
  const errors = [...core.errors];
  for (const srv of core.servers) {
    const given = servers.find((x) => x.pid === srv.pid);
    if (given) {
      srv.port = given.port;
      srv.host = given.host;
    }
  }
  const serverInfo: Record<string, unknown> = {};
  const metrics: Record<string, string> = {};
  const seen = new Set<number>();
  await Promise.all(
    servers.map(async (given) => {
      if (seen.has(given.port)) return;
      seen.add(given.port);
      const srv = core.servers.find((x) => x.pid === given.pid);
      const apiKey = srv ? API_KEYS.get(srv) : undefined;
      const httpPort = httpPortOf({ port: given.port, grpcMode: given.grpcMode, flags: given.flags ?? {} });
      if (httpPort === null) {
        errors.push(`Server info of port ${given.port}: ${NO_HTTP_PORT}`);
        return;
      }
      const info = await fetchServerInfo(t, given.host, httpPort, { apiKey });
      if (info.info) serverInfo[String(given.port)] = redactValue(info.info);
      else errors.push(`Server info of port ${given.port}: ${info.error ?? 'no answer'}`);
      const wantMetrics = given.enableMetrics ?? (srv ? srv.argv.includes('--enable-metrics') : true);
      if (!wantMetrics) return;
      try {
        const r = await httpGet(t, given.host, httpPort, '/metrics', { timeoutMs: 15_000, maxBytes: METRICS_MAX_BYTES });
        if (r.status === 200)
          metrics[String(given.port)] =
            redactText(r.body) + (r.truncated ? `\n# [truncated at ${METRICS_MAX_BYTES / 1024 / 1024} MiB]\n` : '');
        else
          errors.push(`Metrics of port ${given.port}: HTTP ${r.status}${r.status === 404 ? ' (launched without --enable-metrics?)' : ''}`);
      } catch (e) {
        errors.push(`Metrics of port ${given.port}: ${errorMessage(e)}`);
      }
    }),
  );
  const snap: EnvSnapshot = {
    takenAt: core.takenAt,
    node: core.node,
    ssh: sshDetails(t),
    hostname: core.hostname,
    os: core.os,
    kernel: core.kernel,
    uptimeS: core.uptimeS,
    cpu: core.cpu,
    memory: core.memory,
    disks: core.disks,
    gpus: core.gpus,
    python: core.python,
    pipFreeze: core.pipFreeze,
    pipFreezeSource: core.pipFreezeSource,
    keyPackages: core.keyPackages,
    servers: core.servers,
    serverInfo: sortKeys(serverInfo),
    metrics: sortKeys(metrics),
    errors: errors.map(redactText),
  };
  return scrubKnownSecrets(snap, rawSecrets);
}

function sortKeys<T>(o: Record<string, T>): Record<string, T> {
  return Object.fromEntries(Object.entries(o).sort(([a], [b]) => Number(a) - Number(b) || (a < b ? -1 : a > b ? 1 : 0)));
}
