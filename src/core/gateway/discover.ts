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
import {
  GatewayProfile,
  GatewayWorker,
  isUuid,
  parseGatewayMetrics,
  parseListWorkers,
  parseLoads,
  parseReadiness,
  parseWorkersList,
} from './api';
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

/** Reads each candidate and prints one JSON line per gateway (stdlib python3; the text of this script is ours). */
export const GATEWAY_PY = String.raw`
import json, os, re, sys, time
DEADLINE = time.time() + 8
ME = os.getuid()
def read(p, n=65536):
    try:
        with open(p, 'rb') as f: return f.read(n)
    except OSError: return None
def classify(argv):
    if not argv: return None
    a0 = argv[0].strip()
    for t in ('sglang::router', 'smg::router'):
        if a0.startswith(t): return ('title', t)
    b0 = a0.rsplit('/', 1)[-1]
    if b0 in ('smg', 'amg') and len(argv) > 1 and argv[1] in ('launch', 'start', 'serve'): return ('argv', b0)
    if b0 in ('sgl-model-gateway', 'sglang-router'): return ('argv', b0)
    if b0.startswith('python') and '-m' in argv:
        i = argv.index('-m')
        mod = argv[i + 1] if i + 1 < len(argv) else ''
        if mod in ('sglang_router.launch_router', 'sglang_router.launch_server'): return ('argv', mod)
        if mod == 'smg' and i + 2 < len(argv) and argv[i + 2] in ('launch', 'start', 'serve'): return ('argv', mod)
    return None
def listen_map():
    m = {}
    for f, v6 in (('/proc/net/tcp', False), ('/proc/net/tcp6', True)):
        t = read(f, 8 << 20) or b''
        for line in t.decode('ascii', 'replace').splitlines()[1:]:
            x = line.split()
            if len(x) < 10 or x[3] != '0A': continue
            addr, port = x[1].split(':')
            if v6: host = '::' if set(addr) == {'0'} else '::1'
            else: host = '.'.join(str(c) for c in bytes.fromhex(addr)[::-1])
            m[x[9]] = (host, int(port, 16))
    return m
class Slow(Exception):
    pass
def _slow(signum, frame):
    raise Slow('the gateway did not answer within 3 s')
def get(host, port, path, key):
    # One overall deadline per request (headers and body): a gateway answering a byte a second must not hold the
    # probe (socket timeouts only bound each read). SIGALRM interrupts any blocking read.
    import signal, urllib.request, urllib.error
    left = DEADLINE - time.time()
    if left <= 0: return None
    h = '[%s]' % host if ':' in host else host
    req = urllib.request.Request('http://%s:%d%s' % (h, port, path), headers={'Authorization': 'Bearer ' + key} if key else {})
    old = signal.signal(signal.SIGALRM, _slow)
    signal.setitimer(signal.ITIMER_REAL, min(3.0, left))
    try:
        with urllib.request.urlopen(req, timeout=2) as r:
            return {'port': port, 'path': path, 'status': r.status, 'body': r.read(1 << 20).decode('utf-8', 'replace')}
    except urllib.error.HTTPError as e:
        return {'port': port, 'path': path, 'status': e.code, 'body': e.read(65536).decode('utf-8', 'replace')}
    except Exception as e:
        return {'port': port, 'path': path, 'status': 0, 'body': str(e)[:200]}
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
lm = None
for f in sys.argv[1:]:
    d = f[:-len('/cmdline')]
    raw = read(f)
    if raw is None: continue
    argv = [a.decode('utf-8', 'replace') for a in raw.split(b'\0') if a]
    c = classify(argv)
    if not c: continue
    st = (read(d + '/status') or b'').decode('utf-8', 'replace')
    uid = re.search(r'^Uid:\s+(\d+)', st, re.M); ppid = re.search(r'^PPid:\s+(\d+)', st, re.M)
    uid = int(uid.group(1)) if uid else -1
    if ME != 0 and uid != ME: continue
    key = None; shown = []
    for i, a in enumerate(argv if c[0] == 'argv' else []):
        if i > 0 and argv[i - 1] == '--api-key': key = a; a = '***'
        elif a.startswith('--api-key='): key = a[10:]; a = '--api-key=***'
        shown.append(a)
    if lm is None: lm = listen_map()
    socks = set()
    try:
        for fd in os.listdir(d + '/fd')[:4096]:
            try:
                l = os.readlink(d + '/fd/' + fd)
            except OSError: continue
            if l.startswith('socket:['): socks.add(l[8:-1])
    except OSError: pass
    ports = sorted({lm[s] for s in socks if s in lm}, key=lambda x: x[1])[:8]
    http = []
    for host, port in ports:
        h = '127.0.0.1' if host in ('0.0.0.0', '::') else host
        r = get(h, port, '/readiness', key)
        if r is None: break
        http.append(r)
        if r['status'] in (200, 503) and r['body'].lstrip().startswith('{'):
            x = get(h, port, '/workers', key)
            if x is not None: http.append(x)
            if x is not None and x['status'] != 200:
                x = get(h, port, '/list_workers', key)
                if x is not None: http.append(x)
            x = get(h, port, '/get_loads', key)
            if x is not None: http.append(x)
        else:
            x = get(h, port, '/list_workers', key)
            if x is not None and x['status'] == 200 and x['body'].lstrip().startswith('{"urls"'):
                http.append(x)
                continue
            x = get(h, port, '/metrics', None)
            if x is not None: http.append(x)
    def link(p):
        try: return os.readlink(p)
        except OSError: return None
    print(json.dumps({'pid': int(d.rsplit('/', 1)[-1]), 'ppid': int(ppid.group(1)) if ppid else 0, 'uid': uid,
        'found': c[0], 'title': c[1], 'args': shown, 'cwd': link(d + '/cwd'), 'log': link(d + '/fd/1'),
        'listen': [p for _, p in ports], 'http': http}))
`;

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
${GATEWAY_PY}
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

export { isUuid };

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
