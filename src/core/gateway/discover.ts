/**
 * Gateway discovery inside the one probe exec (a self-contained `gateways` section of the probe script).
 *
 * Processes: by title (`sglang::router`, `smg::router`: a Python-launched gateway rewrites its argv, so its flags
 * are gone) or by visible command line (`smg launch …`, `sgl-model-gateway …`, `sglang-router …`,
 * `python -m sglang_router.launch_router …`, `python -m smg launch …`). Ports come from the process's listening
 * sockets (/proc/PID/fd ↔ /proc/net/tcp{,6}), configuration from its API: on each port, GET /readiness says which is
 * the API; there GET /workers (or /list_workers on legacy builds) and /get_loads; on the others GET /metrics.
 * All of it runs on the node (python3, stdlib), only when a cheap grep finds a candidate, with short deadlines and
 * bounded bodies; the key of a gateway started with a visible --api-key is used there and never printed.
 * The raw answers come back as JSON and are parsed here (api.ts), so the parsers are tested without a node.
 */
import { GatewayProfile, GatewayWorker, parseGatewayMetrics, parseListWorkers, parseLoads, parseReadiness, parseWorkersList } from './api';
import { nodeScript } from '../util/nodeScripts';
import { mapLocalWorkers } from './mapping';

export interface Gateway {
  pid: number;
  /** API port (where /readiness answers); null when none answered. */
  port: number | null;
  /** Prometheus port; null when none answered. */
  metricsPort: number | null;
  /** Known only from a visible argv's version-specific binary name (rarely); null otherwise. */
  version: string | null;
  profile: GatewayProfile | null;
  policy: string | null;
  /** How it was found: its process title (flags hidden) or its visible command line. */
  foundBy: 'title' | 'argv';
  /** `sglang::router`, `smg::router`, or the program name of a visible command line. */
  title: string;
  /** The visible argv (any --api-key value replaced by `***`); [] behind a title. */
  args: string[];
  listening: number[];
  /** /readiness: true ready, false 503 (no healthy worker, or draining); null unknown. */
  ready: boolean | null;
  readyReason: string | null;
  /** The API wanted a key the probe does not have (a hidden --api-key). */
  authRequired: boolean;
  workers: GatewayWorker[];
  cwd: string | null;
  logFile: string | null;
}

/** Reads each candidate and prints one JSON line per gateway (stdlib python3; gateways.py beside this module). */
export function gatewayPy(): string {
  return nodeScript('gateway/gateways.py');
}

/**
 * The grep -E pattern for a gateway's /proc/PID/cmdline, one alternative per launcher (the `[e]`, `[g]`, `[y]`
 * brackets keep it from matching the grep's own command line).
 */
const GATEWAY_CMDLINE_ERE = [
  '^(sglang|smg)::rout[e]r',
  'sglang_rout[e]r[.]launch_',
  '-m.sm[g].(launch|serve|start)',
  '^([^/]*/)*(smg|amg|sgl-model-gatewa[y]|sglang-rout[e]r)(.|$)',
].join('|');

/**
 * The probe's `gateways` section: a cheap grep first (its pattern written so it does not match its own command
 * line), python3 only when a process could be a gateway.
 */
export function gatewayProbeScript(): string {
  return `sec gateways
gs_gw=$(grep -l -a -E '${GATEWAY_CMDLINE_ERE}' /proc/[0-9]*/cmdline 2>/dev/null | head -n 256)
if [ -n "$gs_gw" ] && command -v python3 >/dev/null 2>&1; then
python3 - $gs_gw <<'GS_GATEWAY_PY' 2>/dev/null

${gatewayPy()}
GS_GATEWAY_PY
elif [ -n "$gs_gw" ]; then echo '{"nopython":true}'; fi`;
}

interface RawHttp {
  port: number;
  path: string;
  status: number;
  body: string;
}

function flag(args: string[], name: string): string | null {
  for (let i = 0; i < args.length; i++) {
    if (args[i] === name && i + 1 < args.length) return args[i + 1];
    if (args[i].startsWith(name + '=')) return args[i].slice(name.length + 1);
  }
  return null;
}

/** One line of the section → a Gateway (workers not yet mapped). null: junk. */
export function parseGatewayRecord(line: string): Gateway | null {
  let o: Record<string, unknown>;
  try {
    o = JSON.parse(line) as Record<string, unknown>;
  } catch {
    return null;
  }
  if (!o || typeof o !== 'object' || typeof o.pid !== 'number') return null;
  const http = (Array.isArray(o.http) ? o.http : []).filter(
    (h): h is RawHttp => !!h && typeof h === 'object' && typeof (h as RawHttp).port === 'number' && typeof (h as RawHttp).body === 'string',
  );
  const args = Array.isArray(o.args) ? o.args.filter((a): a is string => typeof a === 'string') : [];
  const at = (path: string) => http.filter((h) => h.path === path);
  let port: number | null = null;
  let ready: boolean | null = null;
  let readyReason: string | null = null;
  for (const h of at('/readiness')) {
    const r = parseReadiness(h.status, h.body);
    if (r) {
      port = h.port;
      ready = r.ready;
      readyReason = r.reason;
      break;
    }
  }
  if (port === null) {
    // a legacy build without /readiness: the port where /list_workers answers
    const lw0 = at('/list_workers').find((h) => h.status === 200 && parseListWorkers(h.body) !== null);
    if (lw0) port = lw0.port;
  }
  let metricsPort: number | null = null;
  let metrics = null;
  for (const h of at('/metrics')) {
    const m = h.status === 200 ? parseGatewayMetrics(h.body) : null;
    if (m) {
      metricsPort = h.port;
      metrics = m;
      break;
    }
  }
  const api = http.filter((h) => h.port === port);
  const authRequired = api.some((h) => h.status === 401);
  let workers: GatewayWorker[] = [];
  let profile: GatewayProfile | null = null;
  const wl = api.find((h) => h.path === '/workers' && h.status === 200);
  const lw = api.find((h) => h.path === '/list_workers' && h.status === 200);
  const list = wl ? parseWorkersList(wl.body) : null;
  if (list) {
    workers = list.workers;
    profile = list.profile;
  } else if (lw) {
    const urls = parseListWorkers(lw.body);
    if (urls) {
      profile = 'legacy-0.1';
      workers = urls.map((url) => ({
        id: url,
        url,
        type: 'regular' as const,
        healthy: null,
        status: null,
        load: null,
        bootstrapPort: null,
        job: null,
        node: null,
        serverPort: null,
      }));
    }
  }
  const title = typeof o.title === 'string' ? o.title : '';
  if (!profile && port !== null) {
    // no worker to tell: the title, then the metrics' names
    if (title === 'smg::router' || title === 'smg' || title === 'amg') profile = 'smg-1.x';
    else if (metrics) profile = metrics.prefix === 'smg_' ? 'rest-by-uuid-0.3' : 'rest-by-url-0.2';
  }
  const loads = api.find((h) => h.path === '/get_loads' && h.status === 200);
  const loadMap = loads ? parseLoads(loads.body) : new Map<string, number | null>();
  for (const w of workers) {
    if (w.load === null && loadMap.has(w.url)) w.load = loadMap.get(w.url) ?? null;
    if (w.load === null && metrics?.active.has(w.url)) w.load = metrics.active.get(w.url) ?? null;
    if (w.healthy === null && metrics?.health.has(w.url)) {
      w.healthy = metrics.health.get(w.url) ?? null;
      if (w.status === null && w.healthy !== null) w.status = w.healthy ? 'ready' : 'not_ready';
    }
  }
  const found = o.found === 'title' ? 'title' : 'argv';
  const policy = flag(args, '--policy') ?? metrics?.policy ?? (found === 'argv' && port !== null ? 'cache_aware' : null);
  return {
    pid: o.pid,
    port,
    metricsPort,
    version: null,
    profile,
    policy,
    foundBy: found,
    title,
    args,
    listening: Array.isArray(o.listen) ? o.listen.filter((p): p is number => typeof p === 'number') : [],
    ready,
    readyReason,
    authRequired,
    workers,
    cwd: typeof o.cwd === 'string' ? o.cwd : null,
    logFile: typeof o.log === 'string' && o.log.startsWith('/') ? o.log : null,
  };
}

/**
 * The `gateways` section → gateways, each worker mapped to this node's own servers where its URL reaches one
 * (a loopback URL, or the node's hostname). `scope`: the simulated node's folder (SIM_SCOPE_VAR) as for servers.
 */
export function parseGatewaySection(
  section: string,
  local: { node: string; hostname: string | null; servers: Array<{ port: number | null }> },
  scope = '',
): Gateway[] {
  const out: Gateway[] = [];
  const dir = scope.trim().replace(/\/+$/, '');
  for (const line of section.split('\n')) {
    if (!line.startsWith('{')) continue;
    const g = parseGatewayRecord(line);
    if (!g) continue;
    if (dir.startsWith('/') && !(g.cwd?.startsWith(dir + '/') || g.cwd === dir || g.logFile?.startsWith(dir + '/'))) continue;
    mapLocalWorkers(g.workers, local);
    out.push(g);
  }
  return out.slice(0, 64);
}

/** `Gateway :30000 · cache_aware · 3/3 healthy` (the tree row and the text probe). */
export function gatewaySummary(g: Gateway): string {
  const healthy = g.workers.filter((w) => w.healthy === true).length;
  const known = g.workers.some((w) => w.healthy !== null);
  const parts = [`Gateway :${g.port ?? '?'}`];
  if (g.policy) parts.push(g.policy);
  parts.push(known ? `${healthy}/${g.workers.length} healthy` : `${g.workers.length} worker${g.workers.length === 1 ? '' : 's'}`);
  if (g.ready === false) parts.push(`not ready${g.readyReason ? ` (${g.readyReason})` : ''}`);
  if (g.authRequired) parts.push('API key required');
  return parts.join(' · ');
}

/** A worker's state in words: the gateway's status when it has one, else its health. */
export function workerState(w: GatewayWorker): string {
  return w.status ?? (w.healthy === null ? 'health unknown' : w.healthy ? 'healthy' : 'unhealthy');
}

/** Out of rotation or failing as the gateway says: unhealthy, failed, not ready or draining. */
export function workerBad(w: GatewayWorker): boolean {
  return w.healthy === false || /^(failed|not_ready|draining)$/.test(w.status ?? '');
}

/** `ready · load 3 · → gpu-b :30001` (the tree's worker row). */
export function workerDescription(w: GatewayWorker): string {
  const parts = [workerState(w)];
  if (w.load !== null) parts.push(`load ${w.load}`);
  if (w.job) parts.push(`${w.job.type} ${w.job.status}`);
  parts.push(w.node ? `→ ${w.node} :${w.serverPort}` : 'no probed server');
  return parts.join(' · ');
}

/** The `gateways[]` entry of `probe --json` (field names are a contract: issue #28). */
export function gatewayJson(g: Gateway): Record<string, unknown> {
  return {
    pid: g.pid,
    port: g.port,
    metricsPort: g.metricsPort,
    version: g.version,
    profile: g.profile,
    policy: g.policy,
    ready: g.ready,
    foundBy: g.foundBy,
    workers: g.workers.map((w) => ({
      id: w.id,
      url: w.url,
      type: w.type,
      healthy: w.healthy,
      status: w.status,
      load: w.load,
      node: w.node,
      serverPort: w.serverPort,
    })),
  };
}

/** Text lines for the CLI's probe: the summary, then one line per worker (node strings made visible by the caller's sink). */
export function gatewayLines(gws: Gateway[]): string[] {
  const L: string[] = [];
  for (const g of gws) {
    L.push(
      `  ${gatewaySummary(g)}  pid ${g.pid}${g.profile ? `  API ${g.profile}` : ''}${g.metricsPort ? `  metrics :${g.metricsPort}` : ''}`,
    );
    for (const w of g.workers.slice(0, 64)) {
      const load = w.load !== null ? `  load ${w.load}` : '';
      const server = w.node ? `  → ${w.node}:${w.serverPort}` : '';
      L.push(`    ${w.type === 'regular' ? 'worker' : w.type} ${JSON.stringify(w.url)}  ${workerState(w)}${load}${server}`);
    }
  }
  return L;
}
