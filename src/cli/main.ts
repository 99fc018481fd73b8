/**
 * gpu-sessions: the headless CLI. Calls the same core as the extension.
 * Exit codes: 0 ok, 2 usage, 3 host-key problem, 4 unreachable or auth failure, 5 unsafe (salvage), 1 other.
 */
import * as os from 'node:os';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { errorMessage, exitCodeFor } from '../core/util/errors';
import { outputStreamRedactor, redactOutput } from '../core/util/redact';
import { visible } from '../core/util/terminal';
import { listNodes } from '../core/ssh/nodes';
import { runOperation } from '../core/remote/operation';
import { probeOperation } from '../core/node/probe';
import { formatProbe, formatRental } from './format';
import type { OwnTerms } from '../core/node/rental';
import { USAGE } from './usage';
import { CliIo, GlobalOpts, defaultIo, makePool, nodeFor, probeJson, probeNode, usageError, withNode } from './cliNode';

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

async function cmdProbe(args: string[], v: Record<string, unknown>, g: GlobalOpts, io: CliIo): Promise<number> {
  if (args.length !== 1) usageError('probe takes exactly one NODE.');
  const own = ownTerms(v);
  return withNode(args[0], g, io, async (t, node, signal) => {
    const p = await runOperation(t, probeOperation(node.name, { roots: node.roots }), signal);
    // the provider's price and end, read on the node with its own key (issue 46 item 5); flags override them
    const { readProviderRental, rentalTerms } = await import('../core/node/rental');
    const provider = await readProviderRental(t, p.provider, signal);
    const rental = { provider, terms: rentalTerms(own, provider) };
    io.out(g.json ? JSON.stringify(probeJson(p, rental), null, 2) + '\n' : formatProbe(p) + formatRental(rental.terms));
    return 0;
  });
}

/** `--price-per-hour` and `--deadline` (probe, watch): the user's own terms, over the provider's. */
function ownTerms(v: Record<string, unknown>): OwnTerms {
  const price = v['price-per-hour'] !== undefined ? Number(v['price-per-hour']) : null;
  if (price !== null && !(price >= 0 && Number.isFinite(price))) usageError('--price-per-hour is a number of US dollars, e.g. 12.5.');
  const deadline = deadlineOption(v);
  return {
    price: price !== null ? { value: price, source: '--price-per-hour' } : null,
    deadline: deadline ? { at: deadline, source: '--deadline' } : null,
  };
}

/** `--keep`: the demo node runs until Ctrl-C. */
async function keepUntilSignal(io: CliIo): Promise<void> {
  io.err('Demo node is running. Press Ctrl-C to stop it.\n');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
}

async function cmdDemo(
  args: string[],
  g: GlobalOpts,
  io: CliIo,
  o: { keep: boolean; salvage: boolean; dest?: string; provider?: string; guard?: boolean },
): Promise<number> {
  const { keep, salvage, dest } = o;
  const provider = o.provider ?? 'runpod';
  if (!['runpod', 'vast', 'none'].includes(provider)) usageError(`--provider is runpod, vast or none (got "${provider}").`);
  const { startDemoNode } = await import('../sim/demoServer');
  const dir = args[0] ?? path.join(os.tmpdir(), `gpu-sessions-demo-${os.userInfo().uid}`);
  io.err(
    `Starting the demo node (simulated 7x NVIDIA B200, 7 SGLang servers${provider === 'none' ? '' : `, a ${provider} rental`}) in ${dir} ...\n`,
  );
  const demo = await startDemoNode({
    dir,
    log: (m) => io.err(m + '\n'),
    sim: { provider: provider === 'none' ? null : (provider as 'runpod' | 'vast') },
  });
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
    // --guard (issue 47): the node runs its own guard; stopped before the demo ends
    const dguard = o.guard ? await import('./cmdDemoGuard') : null;
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
          if (dguard) await dguard.demoGuardStart(pool.get(node), node.name, dguard.demoGuardOptions(dir, s3), io);
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
              // The demo node is this machine: its roots are the demo's own folders, never this host's volumes.
              volumes: [],
              // The job is done and the node is about to go: stop the servers so the verdict can be safe.
              stopServers: !keep,
            },
            io,
          );
        } finally {
          await s3?.stop();
        }
      } else {
        if (dguard) await dguard.demoGuardStart(pool.get(node), node.name, dguard.demoGuardOptions(dir, null), io);
        if (g.json) io.out(JSON.stringify(probeJson(p), null, 2) + '\n');
      }
    } finally {
      if (dguard) {
        if (keep) await keepUntilSignal(io);
        await dguard.demoGuardStop(pool.get(node), node.name, io);
      }
      pool.dispose();
    }
    if (keep && !dguard) await keepUntilSignal(io);
    // The demo's verdict is informative: exit 0 when it ran (5 would read as a failure of `npm run demo`).
    return code === 5 ? 0 : code;
  } finally {
    await cleanup();
  }
}

/** `gpu-sessions mcp`: the MCP server over stdio. The SDK loads only here (not on the CLI's startup path). */
async function cmdMcp(g: GlobalOpts, io: CliIo, destRoots: string[] = []): Promise<number> {
  const { runMcpServer } = await import('./mcp');
  const { cmdWatch, tuningFromEnv } = await import('./cmdWatch');
  // stdout is the protocol: everything else goes to stderr, and no host key is accepted without a prompt.
  const quiet: CliIo = { out: (s) => io.err(s), err: (s) => io.err(s), isTTY: false };
  const pool = makePool({ ...g, acceptNew: g.acceptNew }, quiet);
  try {
    return await runMcpServer({
      sshConfig: g.sshConfig,
      nodeFor: (name) => nodeFor(name, g),
      destRoots,
      pool,
      freshTransport: (node) => makePool({ ...g, acceptNew: false }, quiet, node).get(node),
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
  const own = ownTerms(v);
  if (v.data !== undefined && v['no-data']) usageError('--data and --no-data do not go together.');
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
        // the flags' terms; without them the provider's, where the node can tell (read after the first probe)
        terms: { own, leadMs: leadMin * 60_000 },
        historyDir: defaultHistoryDir(),
        data: v['no-data'] ? null : { paths: typeof v.data === 'string' ? v.data.split(',').filter(Boolean) : [], roots: g.roots },
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
  // Block state across writes: a private key printed line by line (tail --follow) is redacted as a block.
  const out = outputStreamRedactor();
  const err = outputStreamRedactor();
  return {
    ...io,
    out: (s) => io.out(visible(out(s), true)),
    err: (s) => io.err(visible(err(s), true)),
    raw: (s) => raw(out(s)),
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
        fleet: { type: 'boolean' },
        guard: { type: 'boolean' },
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
        via: { type: 'string', multiple: true },
        lines: { type: 'string', short: 'n' },
        follow: { type: 'boolean', short: 'f' },
        stats: { type: 'boolean' },
        raw: { type: 'boolean' },
        s3: { type: 'string' },
        's3-endpoint': { type: 'string' },
        yes: { type: 'boolean', short: 'y' },
        'include-large': { type: 'boolean' },
        'size-threshold': { type: 'string' },
        leave: { type: 'string', multiple: true },
        'keep-secrets': { type: 'boolean' },
        'add-root': { type: 'string', multiple: true },
        'mcp-dest': { type: 'string', multiple: true },
        'stop-servers': { type: 'boolean' },
        'stop-writers': { type: 'boolean' },
        redact: { type: 'boolean' },
        'no-gitignore': { type: 'boolean' },
        'max-files': { type: 'string' },
        'max-depth': { type: 'string' },
        watch: { type: 'boolean' },
        'upload-missing': { type: 'boolean' },
        'download-guarded': { type: 'boolean' },
        'from-guard': { type: 'string' },
        'part-size': { type: 'string' },
        grace: { type: 'string' },
        roots: { type: 'string' },
        interval: { type: 'string' },
        until: { type: 'string' },
        'price-per-hour': { type: 'string' },
        deadline: { type: 'string' },
        'deadline-lead': { type: 'string' },
        sample: { type: 'string' },
        'response-field': { type: 'string' },
        'prompt-field': { type: 'string' },
        thresholds: { type: 'string' },
        data: { type: 'string' },
        'no-data': { type: 'boolean' },
        map: { type: 'string', multiple: true },
        'include-dotfiles': { type: 'string', multiple: true },
        force: { type: 'boolean' },
        launch: { type: 'boolean' },
        fill: { type: 'boolean' },
        'resume-client': { type: 'boolean' },
        timeout: { type: 'string' },
        to: { type: 'string' },
        'when-done': { type: 'string' },
        stop: { type: 'boolean' },
        terminate: { type: 'boolean' },
        shutdown: { type: 'boolean' },
        'verify-timeout': { type: 'string' },
        provider: { type: 'string' },
        idle: { type: 'string' },
        'stop-client-on-bad-data': { type: 'boolean' },
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
        return await cmdProbe(rest, v, g, io);
      case 'resolve': {
        const { cmdResolve } = await import('./cmdResolve');
        return await cmdResolve(rest, g, io);
      }
      case 'demo':
        if (v.fleet) {
          const { cmdDemoFleet } = await import('./cmdDemoFleet');
          return await cmdDemoFleet(rest, g, io, {
            keep: Boolean(v.keep),
            salvage: !v['no-salvage'],
            dest: v.dest ? path.resolve(v.dest) : undefined,
          });
        }
        return await cmdDemo(rest, g, io, {
          keep: Boolean(v.keep),
          salvage: !v['no-salvage'],
          dest: v.dest ? path.resolve(v.dest) : undefined,
          provider: v.provider,
          guard: Boolean(v.guard),
        });
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
      case 'restore': {
        if (rest.length !== 2) usageError('restore takes RUN_DIR and NODE.');
        const { parseMapOption } = await import('../core/restore/mapping');
        const maps = (v.map ?? []).map(parseMapOption);
        const readyS = v['ready-timeout'] !== undefined ? Number(v['ready-timeout']) : undefined;
        if (readyS !== undefined && !(readyS > 0)) usageError('--ready-timeout is a positive number of seconds.');
        const { cmdRestore } = await import('./cmdRestore');
        const L = await import('./cmdLaunch');
        const secretFiles = Object.fromEntries((v.secret ?? []).map((x) => L.parseSecretOption(x)));
        return await withNode(rest[1], g, io, (t, node, signal) =>
          cmdRestore(
            t,
            node.name,
            {
              runDir: path.resolve(rest[0]),
              fromGuard: v['from-guard'],
              s3Endpoint: v['s3-endpoint'],
              maps,
              includeDotfiles: (v['include-dotfiles'] as string[] | undefined) ?? [],
              force: Boolean(v.force),
              launch: Boolean(v.launch),
              dryRun: Boolean(v['dry-run']),
              fill: Boolean(v.fill),
              resumeClient: Boolean(v['resume-client']),
              yes: Boolean(v.yes),
              json: g.json,
              readyTimeoutS: readyS,
              secretFiles,
            },
            io,
            signal,
          ),
        );
      }
      case 'watch':
        return await cmdWatchMain(rest, v, g, io);
      case 'mcp': {
        if (rest.length) usageError('mcp takes no arguments (it speaks MCP over stdin/stdout).');
        const destRoots = ((v['mcp-dest'] as string[] | undefined) ?? []).map((d) => path.resolve(d));
        return await cmdMcp(g, io, destRoots);
      }
      case 'data': {
        if (rest.length < 1) usageError('data takes NODE and optional PATHs.');
        const { dataCliOptions, cmdData } = await import('./cmdData');
        const o = dataCliOptions(v, g.json, rest.slice(1), usageError);
        return await withNode(rest[0], g, io, (t, node, signal) => cmdData(t, node.name, { ...o, roots: node.roots }, io, signal));
      }
      case 'guard': {
        const sub = rest[1];
        if (rest.length !== 2 || !['start', 'status', 'stop'].includes(sub ?? ''))
          usageError('guard takes NODE and start, status or stop (gpu-sessions guard NODE start --to DIR_ON_NODE).');
        const G = await import('./cmdGuard');
        if (sub === 'start') {
          const o = (await import('../core/flows/guard')).guardStartOptions(v, g.json, usageError);
          return await withNode(rest[0], g, io, (t, node, signal) =>
            G.cmdGuardStart(t, node.name, { ...o, roots: node.roots }, io, signal),
          );
        }
        return await withNode(rest[0], g, io, (t, node, signal) =>
          sub === 'status' ? G.cmdGuardStatus(t, node.name, g.json, io, signal) : G.cmdGuardStop(t, node.name, g.json, io, signal),
        );
      }
      case 'history': {
        if (rest.length !== 1) usageError('history takes exactly one NODE.');
        const { cmdHistory } = await import('./cmdHistory');
        return cmdHistory(rest[0], { json: g.json }, io);
      }
      case 'release': {
        if (rest.length !== 1) usageError("release takes exactly one NODE (the gateways' nodes go in --via).");
        const drainS = v['drain-timeout'] !== undefined ? Number(v['drain-timeout']) : 300;
        if (!(drainS > 0)) usageError('--drain-timeout is a positive number of seconds.');
        const node = nodeFor(rest[0], g);
        const via = (v.via ?? [])
          .flatMap((x) => x.split(','))
          .filter(Boolean)
          .map((x) => nodeFor(x, g));
        const { cmdRelease } = await import('./cmdRelease');
        const pool = makePool(g, io, node);
        const ac = new AbortController();
        const onSig = () => ac.abort();
        process.once('SIGINT', onSig);
        try {
          return await cmdRelease(
            node,
            via,
            pool,
            {
              via: via.map((x) => x.name),
              drainTimeoutS: drainS,
              dest: path.resolve(v.dest ?? 'salvage'),
              dryRun: Boolean(v['dry-run']),
              yes: Boolean(v.yes),
              json: g.json,
            },
            io,
            ac.signal,
          );
        } finally {
          process.off('SIGINT', onSig);
          pool.dispose();
        }
      }
      case 'end-rental': {
        if (rest.length !== 1) usageError('end-rental takes exactly one NODE.');
        const E = await import('./cmdEndRental');
        const { action, verifyTimeoutS } = E.endRentalAction(v, usageError);
        const node = nodeFor(rest[0], g);
        const pool = makePool(g, io, node);
        const ac = new AbortController();
        const onSig = () => ac.abort();
        process.once('SIGINT', onSig);
        // each check of "does SSH still let a session in" is a new connection (its own pool; the flow disposes it)
        const fresh = () => makePool({ ...g, acceptNew: false }, { ...io, isTTY: false }, node).get(node);
        try {
          return await E.cmdEndRental(
            node,
            pool,
            fresh,
            {
              action,
              verifyTimeoutS,
              dest: path.resolve(v.dest ?? 'salvage'),
              dryRun: Boolean(v['dry-run']),
              yes: Boolean(v.yes),
              json: g.json,
            },
            io,
            ac.signal,
          );
        } finally {
          process.off('SIGINT', onSig);
          pool.dispose();
        }
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
        const leave = (v.leave ?? []).filter(Boolean);
        for (const r of leave) if (!r.startsWith('/')) usageError(`--leave takes an absolute path on the node, not "${r}".`);
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
              leave,
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
              downloadGuarded: Boolean(v['download-guarded']),
              partSizeMiB,
              intervalS: wInterval,
              graceS,
              deadline: deadlineOption(v),
              verbose: g.verbose,
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
  // Exit once stdout has drained: process.exit() drops what a pipe has not taken yet (a 400 KB `salvage --json`
  // read by a slower consumer came out cut).
  const exitAfterFlush = (code: number) =>
    process.stdout.writableLength ? process.stdout.write('', () => process.exit(code)) : process.exit(code);
  main(process.argv.slice(2)).then(
    (code) => exitAfterFlush(code),
    (e) => {
      process.stderr.write(`error: ${visible(redactOutput(errorMessage(e)), true)}\n`);
      process.exit(1);
    },
  );
}
