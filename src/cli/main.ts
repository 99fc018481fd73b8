/**
 * gpu-sessions: the headless CLI. Calls the same core as the extension.
 * Exit codes: 0 ok, 2 usage, 3 host-key problem, 4 unreachable or auth failure, 5 unsafe (salvage), 1 other.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { GpuSessionsError, errorMessage, exitCodeFor } from '../core/util/errors';
import { stderrLogger } from '../core/util/logger';
import { redactOutput } from '../core/util/redact';
import { visible } from '../core/util/terminal';
import { defaultKnownHostsFiles } from '../core/ssh/knownHostsFiles';
import { KnownHostsStore } from '../core/ssh/knownHosts';
import { listNodes, resolveNode } from '../core/ssh/nodes';
import { runOperation } from '../core/remote/operation';
import { ConnectionPool } from '../core/ssh/pool';
import { ProbeResult, probeOperation } from '../core/node/probe';
import type { NodeSpec } from '../core/ssh/config';
import type { HostKeyPrompt, Transport } from '../core/ssh/transport';
import { formatProbe } from './format';

const USAGE = `gpu-sessions — watch and salvage GPU nodes running SGLang

Usage:
  gpu-sessions nodes [--json]                 list nodes from ssh config
  gpu-sessions probe NODE [--json]            GPUs, SGLang servers and artifacts of a node (one SSH round trip)
  gpu-sessions salvage NODE --dest DIR [--roots A,B] [--add-root DIR] [--stop-servers] [--drain] [--stop-writers]
                        [--redact] [--no-gitignore] [--include-large] [--s3 s3://bucket/prefix] [--s3-endpoint URL]
                        [--max-files N] [--max-depth N] [--watch [--interval S] [--grace S]]
                        [--upload-missing [--part-size MiB]] [--deadline ISO] [--yes] [--json]
                                              every file under the work's folders saved byte-exact or listed with
                                              why it stays; check S3; environment; whether NODE is safe to shut
                                              down (exit 5 unsafe: still-running, changed-during-run, ...)
      [--size-threshold MiB]
  gpu-sessions parse-log [FILE...] [--json | --summary]
                                              SGLang log lines → stats (stdin when no FILE)
  gpu-sessions tail NODE PATH [--lines N] [--follow] [--stats] [--raw]
                                              follow a remote log; --stats prints a live one-line summary;
                                              --raw passes the log's bytes (ANSI colours) to the terminal as they are
  gpu-sessions launch NODE --profile FILE [--dry-run] [--override] [--ready-timeout S] [--secret NAME=@FILE] [--json]
                                              start a launch profile's servers and wait until they are ready
                                              (--dry-run prints the exact script and the preflight's findings
                                              as warnings, starts nothing, exits 0 for a valid profile);
                                              secrets the profile refers to come from --secret NAME=@FILE
                                              or the environment variable NAME
  gpu-sessions capture NODE --out FILE        save the running servers as a launch profile
  gpu-sessions stop NODE --port PORT [--drain] stop a server (optionally after its running requests finish)
  gpu-sessions restart NODE --port PORT [--drain]
                                              stop a server and start it again with the same command line
  gpu-sessions watch NODE... [--json] [--interval SECONDS] [--until done|crashed|unhealthy|any]
                 [--price-per-hour USD] [--deadline ISO-8601]
                                              poll nodes; one line per sample and per transition (server
                                              states, failures, lost GPUs, full disks, job done, spend)
  gpu-sessions history NODE [--json]          the samples and transitions kept by earlier watch runs
  gpu-sessions mcp                            Model Context Protocol server over stdio for coding agents (tools:
                                              list_nodes, probe_node, tail_log, parse_log, salvage_plan,
                                              salvage_node with confirm: true, salvage_status, watch_node)
  gpu-sessions demo [--keep] [--no-salvage] [--dest DIR] [--json]
                                              start the embedded demo node (simulated 7x B200), probe it, and
                                              salvage it against a local S3 (s3rver) that holds part of its data

NODE is a Host alias from ssh config or [user@]host[:port].

Global options:
  --ssh-config FILE     ssh client config (default ~/.ssh/config)
  --known-hosts FILE    known_hosts file to check and append to (default ~/.ssh/known_hosts)
  --identity FILE       private key to try first (repeatable)
  --accept-new          accept and record an unknown host key (a changed key is always refused)
  --roots DIR,...       directories to scan for artifacts (default: the home, the user's provider volumes
                        such as /workspace or /data, and the SGLang servers' working directories)
  --timeout SECONDS     connect timeout (default 15)
  -v, --verbose         log connection details to stderr
  -h, --help            this help

Exit codes: 0 ok, 2 usage or invalid profile, 3 host-key problem, 4 unreachable or auth failure,
5 salvage verdict unsafe, 6 launch refused by preflight, 7 a launched instance did not become ready,
8 watch --until: a node became unreachable first, 130 interrupted (Ctrl-C).`;

export interface CliIo {
  out: (s: string) => void;
  err: (s: string) => void;
  /** Bytes for the terminal as they are (our own cursor controls, `tail --raw`); out/err are sanitized. */
  raw?: (s: string) => void;
  isTTY: boolean;
  ask?: (question: string) => Promise<string>;
}

const defaultIo: CliIo = {
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

function usageError(msg: string): never {
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

function nodeFor(arg: string | undefined, g: GlobalOpts): NodeSpec {
  if (!arg) usageError('Missing NODE.');
  const listing = listNodes({ sshConfigFile: g.sshConfig });
  const node = resolveNode(arg, listing);
  if (!node) usageError(`Unknown node "${arg}": not a Host alias in ${g.sshConfig ?? '~/.ssh/config'} and not [user@]host[:port].`);
  if (g.roots) node.roots = g.roots;
  return node;
}

/** Runs fn with the node's pooled transport; Ctrl-C aborts it; the pool is closed afterwards. */
async function withNode<T>(
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

export function probeJson(p: ProbeResult): Record<string, unknown> {
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
    artifacts: p.artifacts,
    artifactsTruncated: p.artifactsTruncated,
    homeDir: p.homeDir,
    probedAt: p.probedAt,
    durationMs: p.durationMs,
  };
}

async function cmdNodes(g: GlobalOpts, io: CliIo): Promise<number> {
  const listing = listNodes({ sshConfigFile: g.sshConfig });
  for (const d of listing.diagnostics) io.err(`warning: ${d.file}:${d.line}: ${d.message}\n`);
  if (g.json) {
    io.out(
      JSON.stringify(
        listing.nodes.map((n) => ({ name: n.name, host: n.host, user: n.user ?? null, port: n.port, proxyJump: n.proxyJump ?? null })),
        null,
        2,
      ) + '\n',
    );
  } else if (listing.nodes.length === 0) {
    io.out(`No nodes. Add Host entries to ${g.sshConfig ?? '~/.ssh/config'} or gpuSessions.nodes in VS Code settings.\n`);
  } else {
    for (const n of listing.nodes)
      io.out(`${n.name}\t${n.user ? n.user + '@' : ''}${n.host}:${n.port}${n.proxyJump ? `\tvia ${n.proxyJump}` : ''}\n`);
  }
  return 0;
}

async function cmdProbe(args: string[], g: GlobalOpts, io: CliIo): Promise<number> {
  if (args.length !== 1) usageError('probe takes exactly one NODE.');
  return withNode(args[0], g, io, async (t, node, signal) => {
    const p = await runOperation(t, probeOperation(node.name, { roots: node.roots }), signal);
    io.out(g.json ? JSON.stringify(probeJson(p), null, 2) + '\n' : formatProbe(p));
    return 0;
  });
}

async function cmdDemo(args: string[], g: GlobalOpts, io: CliIo, keep: boolean, salvage: boolean, dest?: string): Promise<number> {
  const { startDemoNode } = await import('../sim/demoServer');
  const dir = args[0] ?? path.join(os.tmpdir(), `gpu-sessions-demo-${os.userInfo().uid}`);
  io.err(`Starting the demo node (simulated 7x NVIDIA B200, 7 SGLang servers) in ${dir} ...\n`);
  const demo = await startDemoNode({ dir, log: (m) => io.err(m + '\n') });
  const cleanup = async () => {
    await demo.stop();
  };
  try {
    io.err(
      `Demo node "${demo.alias}" listening on 127.0.0.1:${demo.port} (host key ${demo.hostKeyFingerprint}).\n` +
        `  ssh config:  ${demo.sshConfigFile}\n  known_hosts: ${demo.knownHostsFile}\n` +
        `  try:         node dist/cli.js --ssh-config ${demo.sshConfigFile} probe ${demo.alias}\n` +
        `               ssh -F ${demo.sshConfigFile} ${demo.alias} nvidia-smi\n`,
    );
    // Give the simulated servers a moment to come up before probing.
    await new Promise((r) => setTimeout(r, 2500));
    const dg: GlobalOpts = { ...g, sshConfig: demo.sshConfigFile, knownHosts: demo.knownHostsFile };
    const node = nodeFor(demo.alias, dg);
    const pool = makePool(dg, io, node);
    let code = 0;
    try {
      const p = await probeNode(node, pool);
      if (!g.json) io.out(formatProbe(p));
      if (salvage) {
        const { startDemoS3 } = await import('../sim/demoS3');
        const s3 = await startDemoS3(demo.home, (m) => io.err(m + '\n'));
        try {
          if (s3)
            io.err(
              `Demo S3 (s3rver) at ${s3.endpoint}: s3://${s3.bucket}/${s3.prefix} already holds ${s3.uploaded.length} completion batch(es).\n`,
            );
          io.err(`\nThe generation job is done: waiting for the servers to go idle…\n`);
          await demo.finishJob();
          io.err(`Salvaging ${demo.alias} (the node is about to be shut down)…\n`);
          const { cmdSalvage } = await import('./cmdSalvage');
          code = await cmdSalvage(
            pool.get(node),
            node.name,
            {
              dest: dest ?? path.join(dir, 'salvage'),
              s3: s3 ? `s3://${s3.bucket}/${s3.prefix}` : undefined,
              s3Endpoint: s3?.endpoint,
              yes: true,
              json: g.json,
              includeLarge: false,
              // The job is done and the node is about to go: stop the servers so the verdict can be safe.
              stopServers: !keep,
            },
            io,
          );
        } finally {
          await s3?.stop();
        }
      } else if (g.json) io.out(JSON.stringify(probeJson(p), null, 2) + '\n');
    } finally {
      pool.dispose();
    }
    if (keep) {
      io.err('Demo node is running. Press Ctrl-C to stop it.\n');
      await new Promise<void>((resolve) => {
        process.once('SIGINT', () => resolve());
        process.once('SIGTERM', () => resolve());
      });
    }
    // The demo's verdict is informative: exit 0 when it ran (5 would read as a failure of `npm run demo`).
    return code === 5 ? 0 : code;
  } finally {
    await cleanup();
  }
}

/** `gpu-sessions mcp`: the MCP server over stdio. The SDK loads only here (not on the CLI's startup path). */
async function cmdMcp(g: GlobalOpts, io: CliIo): Promise<number> {
  const { runMcpServer } = await import('./mcp');
  const { cmdWatch, tuningFromEnv } = await import('./cmdWatch');
  // stdout is the protocol: everything else goes to stderr, and no host key is accepted without a prompt.
  const quiet: CliIo = { out: (s) => io.err(s), err: (s) => io.err(s), isTTY: false };
  const pool = makePool({ ...g, acceptNew: g.acceptNew }, quiet);
  try {
    return await runMcpServer({
      sshConfig: g.sshConfig,
      nodeFor: (name) => nodeFor(name, g),
      pool,
      probeJson,
      version: '0.1.0',
      watch: (node, intervalS, signal, out) =>
        cmdWatch(
          [node],
          pool,
          { json: true, intervalS, until: null, tuning: tuningFromEnv(), historyDir: null },
          { out, err: () => undefined },
          signal,
        ),
    });
  } finally {
    pool.dispose();
  }
}

/** `--deadline ISO-8601` (watch and salvage): the rental's end; null when not given. */
function deadlineOption(v: Record<string, unknown>): Date | null {
  if (v.deadline === undefined) return null;
  const d = String(v.deadline);
  const at = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}/.test(d) ? new Date(d) : new Date(NaN);
  if (Number.isNaN(at.getTime())) usageError(`--deadline is an ISO-8601 time such as 2026-12-02T06:00:00Z (got "${d}").`);
  return at;
}

async function cmdWatchMain(
  rest: string[],
  v: Record<string, string | boolean | string[] | undefined>,
  g: GlobalOpts,
  io: CliIo,
): Promise<number> {
  if (rest.length === 0) usageError('watch takes one or more NODEs.');
  const intervalS = v.interval !== undefined ? Number(v.interval) : 5;
  if (!(intervalS >= 0.5 && intervalS <= 86_400)) usageError('--interval is a number of seconds from 0.5 to 86400.');
  const until = v.until as string | undefined;
  if (until !== undefined && !['done', 'crashed', 'unhealthy', 'any'].includes(until))
    usageError(`--until must be done, crashed, unhealthy or any (got "${until}").`);
  const price = v['price-per-hour'] !== undefined ? Number(v['price-per-hour']) : null;
  if (price !== null && !(price >= 0 && Number.isFinite(price))) usageError('--price-per-hour is a number of US dollars, e.g. 12.5.');
  const deadline = deadlineOption(v);
  const leadMin = v['deadline-lead'] !== undefined ? Number(v['deadline-lead']) : 30;
  if (!(leadMin >= 0)) usageError('--deadline-lead is a number of minutes.');
  const nodes = [...new Set(rest)].map((n) => nodeFor(n, g));
  const pool = makePool(g, io, nodes[0]);
  const ac = new AbortController();
  const onSig = () => ac.abort();
  process.once('SIGINT', onSig);
  process.once('SIGTERM', onSig);
  try {
    const { cmdWatch, tuningFromEnv } = await import('./cmdWatch');
    const { defaultHistoryDir } = await import('../core/node/history');
    return await cmdWatch(
      nodes,
      pool,
      {
        json: g.json,
        intervalS,
        until: (until as 'done' | 'crashed' | 'unhealthy' | 'any' | undefined) ?? null,
        tuning: tuningFromEnv(),
        spend: price !== null || deadline ? { pricePerHour: price, deadline, leadMs: leadMin * 60_000 } : undefined,
        historyDir: defaultHistoryDir(),
      },
      io,
      ac.signal,
    );
  } finally {
    process.off('SIGINT', onSig);
    process.off('SIGTERM', onSig);
    pool.dispose();
  }
}

/**
 * The CLI's boundary: everything written to stdout and stderr goes through the redaction rule, then the
 * one terminal sanitizer (strings from the node cannot move the cursor, retitle the window or reorder
 * text; its escapes are valid JSON, so --json too). `raw` (tail --raw, our cursor controls) is redacted only.
 */
export function redactingIo(io: CliIo): CliIo {
  const raw = io.raw ?? io.out;
  return {
    ...io,
    out: (s) => io.out(visible(redactOutput(s), true)),
    err: (s) => io.err(visible(redactOutput(s), true)),
    raw: (s) => raw(redactOutput(s)),
  };
}

export async function main(argv: string[], rawIo: CliIo = defaultIo): Promise<number> {
  const io = redactingIo(rawIo);
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        'ssh-config': { type: 'string' },
        'known-hosts': { type: 'string' },
        identity: { type: 'string', multiple: true },
        'accept-new': { type: 'boolean' },
        json: { type: 'boolean' },
        keep: { type: 'boolean' },
        'no-salvage': { type: 'boolean' },
        dest: { type: 'string' },
        summary: { type: 'boolean' },
        profile: { type: 'string' },
        'dry-run': { type: 'boolean' },
        override: { type: 'boolean' },
        'ready-timeout': { type: 'string' },
        secret: { type: 'string', multiple: true },
        out: { type: 'string' },
        port: { type: 'string' },
        drain: { type: 'boolean' },
        'drain-timeout': { type: 'string' },
        lines: { type: 'string', short: 'n' },
        follow: { type: 'boolean', short: 'f' },
        stats: { type: 'boolean' },
        raw: { type: 'boolean' },
        s3: { type: 'string' },
        's3-endpoint': { type: 'string' },
        yes: { type: 'boolean', short: 'y' },
        'include-large': { type: 'boolean' },
        'size-threshold': { type: 'string' },
        'keep-secrets': { type: 'boolean' },
        'add-root': { type: 'string', multiple: true },
        'stop-servers': { type: 'boolean' },
        'stop-writers': { type: 'boolean' },
        redact: { type: 'boolean' },
        'no-gitignore': { type: 'boolean' },
        'max-files': { type: 'string' },
        'max-depth': { type: 'string' },
        watch: { type: 'boolean' },
        'upload-missing': { type: 'boolean' },
        'part-size': { type: 'string' },
        grace: { type: 'string' },
        roots: { type: 'string' },
        interval: { type: 'string' },
        until: { type: 'string' },
        'price-per-hour': { type: 'string' },
        deadline: { type: 'string' },
        'deadline-lead': { type: 'string' },
        timeout: { type: 'string' },
        verbose: { type: 'boolean', short: 'v' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (e) {
    io.err(`${errorMessage(e)}\nRun 'gpu-sessions --help' for usage.\n`);
    return 2;
  }
  const v = parsed.values;
  const [cmd, ...rest] = parsed.positionals;
  if (v.help || !cmd) {
    (v.help ? io.out : io.err)(USAGE + '\n');
    return v.help ? 0 : 2;
  }
  const timeoutS = v.timeout !== undefined ? Number(v.timeout) : undefined;
  if (timeoutS !== undefined && !(timeoutS > 0)) {
    io.err(`--timeout must be a positive number of seconds.\n`);
    return 2;
  }
  const g: GlobalOpts = {
    sshConfig: v['ssh-config'] ? path.resolve(v['ssh-config']) : undefined,
    knownHosts: v['known-hosts'] ? path.resolve(v['known-hosts']) : undefined,
    identity: (v.identity ?? []).map((f) => path.resolve(f)),
    acceptNew: Boolean(v['accept-new']),
    json: Boolean(v.json),
    verbose: Boolean(v.verbose),
    roots: v.roots ? v.roots.split(',').filter(Boolean) : undefined,
    timeoutS,
  };
  try {
    switch (cmd) {
      case 'nodes':
        return await cmdNodes(g, io);
      case 'probe':
        return await cmdProbe(rest, g, io);
      case 'demo':
        return await cmdDemo(rest, g, io, Boolean(v.keep), !v['no-salvage'], v.dest ? path.resolve(v.dest) : undefined);
      case 'parse-log': {
        const { cmdParseLog } = await import('./cmdParseLog');
        return await cmdParseLog(rest, { json: g.json, summary: Boolean(v.summary) }, { out: io.out, err: io.err });
      }
      case 'tail': {
        if (rest.length !== 2) usageError('tail takes NODE and PATH.');
        const n = v.lines !== undefined ? Number(v.lines) : 10;
        if (!Number.isInteger(n) || n < 0) usageError('--lines must be a whole number.');
        const { cmdTail } = await import('./cmdTail');
        return await withNode(rest[0], g, io, (t, _n, signal) =>
          cmdTail(
            t,
            rest[1],
            { lines: n, follow: Boolean(v.follow), stats: Boolean(v.stats), raw: Boolean(v.raw) },
            { out: io.out, err: io.err, raw: io.raw, isTTY: process.stdout.isTTY },
            signal,
          ),
        );
      }
      case 'launch':
      case 'capture':
      case 'restart':
      case 'stop': {
        if (rest.length !== 1) usageError(`${cmd} takes exactly one NODE.`);
        if (cmd === 'launch' && !v.profile) usageError('launch needs --profile FILE (a .gpu-sessions/launch/*.json profile).');
        if (cmd === 'capture' && !v.out) usageError('capture needs --out FILE.');
        const port = v.port !== undefined ? Number(v.port) : NaN;
        if ((cmd === 'stop' || cmd === 'restart') && !(Number.isInteger(port) && port > 0 && port < 65536))
          usageError(`${cmd} needs --port PORT (1-65535).`);
        const readyS = v['ready-timeout'] !== undefined ? Number(v['ready-timeout']) : undefined;
        if (readyS !== undefined && !(readyS > 0)) usageError('--ready-timeout is a positive number of seconds.');
        const drainS = v['drain-timeout'] !== undefined ? Number(v['drain-timeout']) : undefined;
        if (drainS !== undefined && !(drainS > 0)) usageError('--drain-timeout is a positive number of seconds.');
        const L = await import('./cmdLaunch');
        const secretFiles = Object.fromEntries((v.secret ?? []).map((x) => L.parseSecretOption(x)));
        return await withNode(rest[0], g, io, async (t, node, signal) => {
          if (cmd === 'launch')
            return L.cmdLaunch(
              t,
              node.name,
              {
                profileFile: path.resolve(v.profile!),
                dryRun: Boolean(v['dry-run']),
                json: g.json,
                override: Boolean(v.override),
                timeoutS: readyS,
                secretFiles,
              },
              io,
              signal,
            );
          if (cmd === 'capture') return L.cmdCapture(t, node.name, { out: path.resolve(v.out!) }, io);
          if (cmd === 'restart') {
            const { restartServer } = await import('../core/launch/restart');
            const r = await restartServer(t, {
              port,
              drain: Boolean(v.drain),
              drainTimeoutMs: drainS ? drainS * 1000 : undefined,
              readyTimeoutMs: readyS ? readyS * 1000 : undefined,
              signal,
              onProgress: g.json ? undefined : (m) => io.err(m + '\n'),
            });
            if (g.json)
              io.out(
                JSON.stringify(
                  { message: r.message, stop: r.stop, outcome: r.launch?.outcome ?? null, instances: r.launch?.instances ?? [] },
                  null,
                  2,
                ) + '\n',
              );
            else io.out(r.message + '\n');
            return r.launch?.outcome === 'ready' ? 0 : r.launch ? 7 : 1;
          }
          return L.cmdStop(t, node.name, { port, drain: Boolean(v.drain), json: g.json, drainTimeoutS: drainS }, io, signal);
        });
      }
      case 'watch':
        return await cmdWatchMain(rest, v, g, io);
      case 'mcp': {
        if (rest.length) usageError('mcp takes no arguments (it speaks MCP over stdin/stdout).');
        return await cmdMcp(g, io);
      }
      case 'history': {
        if (rest.length !== 1) usageError('history takes exactly one NODE.');
        const { cmdHistory } = await import('./cmdHistory');
        return cmdHistory(rest[0], { json: g.json }, io);
      }
      case 'salvage': {
        if (rest.length !== 1) usageError('salvage takes exactly one NODE.');
        if (!v.dest) usageError('salvage needs --dest DIR (the salvage goes to DIR/<node>/<timestamp>/).');
        const thr = v['size-threshold'] !== undefined ? Number(v['size-threshold']) : undefined;
        if (thr !== undefined && !(thr > 0)) usageError('--size-threshold is a positive number of MiB.');
        const maxFiles = v['max-files'] !== undefined ? Number(v['max-files']) : undefined;
        if (maxFiles !== undefined && !(Number.isInteger(maxFiles) && maxFiles > 0)) usageError('--max-files is a positive whole number.');
        const maxDepth = v['max-depth'] !== undefined ? Number(v['max-depth']) : undefined;
        if (maxDepth !== undefined && !(Number.isInteger(maxDepth) && maxDepth > 0 && maxDepth <= 32))
          usageError('--max-depth is a whole number from 1 to 32.');
        if (v.drain && !v['stop-servers']) usageError('--drain only applies with --stop-servers (drain the servers, then stop them).');
        const wInterval = v.interval !== undefined ? Number(v.interval) : undefined;
        if (wInterval !== undefined && !(wInterval >= 0.5 && wInterval <= 86_400))
          usageError('--interval is a number of seconds from 0.5 to 86400.');
        if (wInterval !== undefined && !v.watch) usageError('--interval only applies with --watch.');
        const partSizeMiB = v['part-size'] !== undefined ? Number(v['part-size']) : undefined;
        if (partSizeMiB !== undefined && !(partSizeMiB >= 5 && partSizeMiB <= 5120))
          usageError('--part-size is a number of MiB from 5 to 5120.');
        const graceS = v.grace !== undefined ? Number(v.grace) : undefined;
        if (graceS !== undefined && !(graceS > 0)) usageError('--grace is a positive number of seconds.');
        const addRoots = (v['add-root'] ?? []).flatMap((r) => r.split(',')).filter(Boolean);
        for (const r of addRoots)
          if (!r.startsWith('/') && r !== '~' && !r.startsWith('~/'))
            usageError(`--add-root takes an absolute folder on the node (or ~/…), not "${r}".`);
        const { cmdSalvage } = await import('./cmdSalvage');
        return await withNode(rest[0], g, io, (t, node, signal) =>
          cmdSalvage(
            t,
            node.name,
            {
              dest: path.resolve(v.dest!),
              s3: v.s3,
              s3Endpoint: v['s3-endpoint'],
              yes: Boolean(v.yes),
              json: g.json,
              includeLarge: Boolean(v['include-large']),
              sizeThreshold: thr ? thr * 1048576 : undefined,
              roots: g.roots,
              addRoots,
              redact: Boolean(v.redact),
              gitignore: !v['no-gitignore'],
              stopServers: Boolean(v['stop-servers']),
              drain: Boolean(v.drain),
              stopWriters: Boolean(v['stop-writers']),
              maxFiles,
              maxDepth,
              watch: Boolean(v.watch),
              uploadMissing: Boolean(v['upload-missing']),
              partSizeMiB,
              intervalS: wInterval,
              graceS,
              deadline: deadlineOption(v),
            },
            io,
            signal,
          ),
        );
      }
      default:
        usageError(`Unknown command "${cmd}".`);
    }
  } catch (e) {
    io.err(`error: ${errorMessage(e)}\n`);
    return exitCodeFor(e);
  }
}

if (require.main === module) {
  // `gpu-sessions parse-log big.log | head` closes our stdout early: that is not an error.
  process.stdout.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e) => {
      process.stderr.write(`error: ${visible(redactOutput(errorMessage(e)), true)}\n`);
      process.exit(1);
    },
  );
}
