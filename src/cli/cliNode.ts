/**
 * The CLI's IO and global options, and the node helpers every command uses: pool, node lookup, probe and its JSON.
 */
import { GpuSessionsError } from '../core/util/errors';
import { stderrLogger } from '../core/util/logger';
import { defaultKnownHostsFiles } from '../core/ssh/knownHostsFiles';
import { KnownHostsStore } from '../core/ssh/knownHosts';
import { listNodes, resolveNode } from '../core/ssh/nodes';
import { runOperation } from '../core/remote/operation';
import { ConnectionPool } from '../core/ssh/pool';
import { ProbeResult, probeOperation } from '../core/node/probe';
import { gatewayJson } from '../core/gateway/discover';
import { type ProviderRental, type RentalTerms, rentalTermsJson } from '../core/node/rental';
import { distInitAddr, nodeRank } from '../core/gateway/multinode';
import type { NodeSpec } from '../core/ssh/config';
import type { HostKeyPrompt, Transport } from '../core/ssh/transport';

/**
 * The CLI's one I/O type: every command writes through it (tests pass their own). A command that needs less takes
 * a `Pick` of it.
 */
export interface CliIo {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Bytes for the terminal as they are (our own cursor controls, `tail --raw`); out/err are sanitized. */
  raw?: (s: string) => void;
  isTTY: boolean;
  ask?: (question: string) => Promise<string>;
  /** Read when a command takes its input from stdin (default process.stdin). */
  stdin?: NodeJS.ReadableStream;
}

export const defaultIo: CliIo = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  isTTY: Boolean(process.stdin.isTTY && process.stderr.isTTY),
  ask: async (q) => {
    const rl = (await import('node:readline')).createInterface({ input: process.stdin, output: process.stderr });
    return new Promise((resolve) => rl.question(q, (a) => (rl.close(), resolve(a))));
  },
};

export interface GlobalOpts {
  sshConfig?: string;
  knownHosts?: string;
  identity: string[];
  acceptNew: boolean;
  json: boolean;
  verbose: boolean;
  roots?: string[];
  timeoutS?: number;
}

export function usageError(msg: string): never {
  throw new GpuSessionsError('usage', `${msg}\nRun 'gpu-sessions --help' for usage.`);
}

export function makePool(g: GlobalOpts, io: CliIo, node?: NodeSpec): ConnectionPool {
  const files = g.knownHosts ? [g.knownHosts] : defaultKnownHostsFiles(node);
  const knownHosts = new KnownHostsStore(files);
  const listing = listNodes({ sshConfigFile: g.sshConfig });
  return new ConnectionPool({
    knownHosts,
    resolveHop: (spec) => resolveNode(spec, listing),
    extraIdentityFiles: g.identity,
    connectTimeoutMs: (g.timeoutS ?? 15) * 1000,
    log: stderrLogger(g.verbose),
    confirmHostKey: async (p: HostKeyPrompt) => {
      const where = p.port === 22 ? p.host : `[${p.host}]:${p.port}`;
      if (g.acceptNew) {
        io.err(`Warning: permanently adding ${where} (${p.keyType} ${p.fingerprint}) to ${files[0]}\n`);
        return true;
      }
      if (io.isTTY && io.ask) {
        io.err(`The authenticity of host '${where}' can't be established.\n${p.keyType} key fingerprint is ${p.fingerprint}.\n`);
        if (p.otherKnown.length) io.err(`Other keys known for this host:\n  ${p.otherKnown.join('\n  ')}\n`);
        const a = (await io.ask('Are you sure you want to continue connecting (y/N)? ')).trim().toLowerCase();
        return a === 'y' || a === 'yes';
      }
      return false;
    },
    askPassphrase: io.isTTY && io.ask ? async (file) => (await io.ask!(`Enter passphrase for key '${file}': `)) || undefined : undefined,
  });
}

export function nodeFor(arg: string | undefined, g: GlobalOpts): NodeSpec {
  if (!arg) usageError('Missing NODE.');
  if (arg.startsWith('-'))
    usageError(`Refusing the node name "${arg.slice(0, 80)}": a node name may not start with '-' (OpenSSH refuses it too).`);
  const listing = listNodes({ sshConfigFile: g.sshConfig });
  const node = resolveNode(arg, listing);
  if (!node) usageError(`Unknown node "${arg}": not a Host alias in ${g.sshConfig ?? '~/.ssh/config'} and not [user@]host[:port].`);
  if (g.roots) node.roots = g.roots;
  return node;
}

/** Runs fn with the node's pooled transport; Ctrl-C aborts it; the pool is closed afterwards. */
export async function withNode<T>(
  arg: string,
  g: GlobalOpts,
  io: CliIo,
  fn: (t: Transport, node: NodeSpec, signal: AbortSignal) => Promise<T>,
): Promise<T> {
  const node = nodeFor(arg, g);
  const pool = makePool(g, io, node);
  const ac = new AbortController();
  const onSig = () => ac.abort();
  process.once('SIGINT', onSig);
  process.once('SIGTERM', onSig);
  try {
    return await fn(pool.get(node), node, ac.signal);
  } finally {
    process.off('SIGINT', onSig);
    process.off('SIGTERM', onSig);
    pool.dispose();
  }
}

export async function probeNode(
  node: NodeSpec,
  pool: ConnectionPool,
  opts: { maxDepth?: number; maxArtifacts?: number } = {},
): Promise<ProbeResult> {
  const t = pool.get(node);
  return runOperation(t, probeOperation(node.name, { roots: node.roots, ...opts }));
}

/**
 * The probe's JSON; with `rental` (`probe`), the provider's own price and end under `provider.rental` and the terms
 * that count, each with its source, as `rental`.
 */
export function probeJson(p: ProbeResult, rental?: { provider: ProviderRental | null; terms: RentalTerms }): Record<string, unknown> {
  return {
    node: p.node,
    hostname: p.hostname,
    os: p.os,
    kernel: p.kernel,
    uptimeS: p.uptimeS,
    cpuModel: p.cpuModel,
    cpuCores: p.cpuCores,
    memTotalKiB: p.memTotalKiB,
    memAvailableKiB: p.memAvailableKiB,
    disks: p.disks,
    gpuState: p.gpuState,
    gpuMessage: p.gpuMessage,
    driverVersion: p.driverVersion,
    cudaVersion: p.cudaVersion,
    gpus: p.gpus,
    lostGpus: p.lostGpus,
    gpuProcesses: p.gpuProcesses,
    servers: p.servers.map((s) => ({
      pid: s.pid,
      port: s.port,
      host: s.host,
      modelPath: s.modelPath,
      servedModelName: s.servedModelName,
      tp: s.tp,
      dp: s.dp,
      speculativeAlgorithm: s.speculativeAlgorithm,
      reasoningParser: s.reasoningParser,
      enableMetrics: s.enableMetrics,
      hasApiKey: Boolean(s.hasApiKey),
      pp: s.pp ?? 1,
      ep: s.ep ?? 1,
      nnodes: s.nnodes ?? 1,
      nodeRank: nodeRank(s),
      distInitAddr: distInitAddr(s),
      enableDpAttention: Boolean(s.enableDpAttention),
      gpuCount: s.gpuCount ?? s.tp * s.dp,
      logLevel: s.logLevel ?? 'info',
      statLines: s.statLines !== false,
      configFile: s.configFile ?? null,
      logFile: s.logFile,
      gpus: s.gpus,
      args: s.args,
      flags: s.flags,
    })),
    gateways: (p.gateways ?? []).map(gatewayJson),
    // which provider rents the node and what it can end the rental with; keys only ever as "set"
    provider: p.provider
      ? {
          name: p.provider.name,
          instanceId: p.provider.instanceId,
          evidence: p.provider.evidence,
          actions: p.provider.actions,
          ...(rental ? { rental: rental.provider } : {}),
        }
      : null,
    ...(rental ? { rental: rentalTermsJson(rental.terms) } : {}),
    artifacts: p.artifacts,
    artifactsTruncated: p.artifactsTruncated,
    homeDir: p.homeDir,
    probedAt: p.probedAt,
    durationMs: p.durationMs,
  };
}
