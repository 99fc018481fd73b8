/**
 * A simulated GPU node behind a real OpenSSH sshd: an unprivileged user whose home is built by
 * buildSimHome, with the simulated SGLang servers started over ssh exactly as a user would
 * (`bash ~/launch_all.sh`), so they run as that user with `python3 -m sglang.launch_server ...` argv.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { SimNodeLayout, SimNodeOptions, buildSimHome } from '../../src/sim/home';
import { TestSshd, ensureUser } from './sshd';
import { freeTestPorts } from './ports';
import { waitFor } from './wait';
import { simContainerDead } from '../../src/sim/provider';

export const SIM_USER = 'gpusim';

/**
 * The test user for a suite: GS_TEST_USER_SUFFIX lets several checkouts run the integration suites at once without
 * sharing a user (idempotent: a name that already carries the suffix is kept).
 */
export function testUser(name: string): string {
  const sfx = process.env.GS_TEST_USER_SUFFIX ?? '';
  return sfx && name.endsWith(sfx) ? name : name + sfx;
}

export interface SimNode {
  sshd: TestSshd;
  layout: SimNodeLayout;
  home: string;
  user: string;
  stop(): Promise<void>;
}

/** Writes `rel` under the node's home as its user (its top folder chowned): a file the node's own user made. */
export function putOnNode(sim: Pick<SimNode, 'home' | 'user'>, rel: string, body: string): string {
  const p = path.join(sim.home, rel);
  mkdirSync(path.dirname(p), { recursive: true });
  writeFileSync(p, body);
  execFileSync('chown', ['-R', `${sim.user}:${sim.user}`, path.join(sim.home, rel.split('/')[0])]);
  return p;
}

/** Empty a home directory (keeps the directory itself). */
export function wipeHome(home: string): void {
  for (const e of readdirSync(home)) rmSync(path.join(home, e), { recursive: true, force: true });
}

export interface StartSimNodeOptions extends SimNodeOptions {
  startServers?: boolean;
  /** Unprivileged user whose home becomes the node (default gpusim). Its home is wiped first. */
  user?: string;
  /** Start the workspace's generation client (`run_experiment`, talks to GPU 0's port, appends to out/). */
  startClient?: boolean;
  /** Called with the home after it is built and before anything starts (plant files, secrets…). */
  beforeStart?: (home: string) => void;
}

export async function startSimNode(opts: StartSimNodeOptions = {}): Promise<SimNode> {
  const user = testUser(opts.user ?? SIM_USER);
  const { home } = ensureUser(user);
  // Stop anything a previous run left behind for this user.
  spawnSync('pkill', ['-u', user, '-f', 'sglang.launch_server']);
  wipeHome(home);
  const basePort = opts.basePort ?? (await freeTestPorts(opts.gpuCount ?? 7));
  const layout = buildSimHome(home, { ...opts, basePort });
  opts.beforeStart?.(home);
  execFileSync('chown', ['-Rh', `${user}:${user}`, home]);
  if (layout.workspace) execFileSync('chown', ['-Rh', `${user}:${user}`, layout.workspace]);
  const sshd = await TestSshd.start({ user });
  if (opts.startServers !== false) {
    const r = sshd.ssh('bash ~/launch_all.sh');
    if (r.status !== 0) throw new Error(`launch_all.sh failed over ssh: ${r.stderr}`);
    await waitFor(
      'simulated servers to write their pid files',
      () => {
        const h = sshd.ssh(`ls ~/.sim/run/ 2>/dev/null | wc -l`);
        return Number(h.stdout.trim()) >= layout.ports.length;
      },
      20_000,
    );
    await waitFor(
      'simulated servers to be ready',
      () => layout.logFiles.every((f) => existsSync(f) && readFileSync(f, 'utf8').includes('ready to roll')),
      30_000,
    );
  }
  if (opts.startClient && layout.workspace) {
    const ws = layout.workspace;
    const r = sshd.ssh(
      `cd '${ws}' && setsid nohup python3 ./run_experiment --port ${layout.ports[0]} > '${ws}/run.log' 2>&1 < /dev/null & echo started`,
    );
    // ssh may report 255 when the detached client keeps the session's last channel busy; the output says.
    if (!r.stdout.includes('started')) throw new Error(`run_experiment failed to start (${r.status}): ${r.stderr}`);
    await waitFor('the client to write its first result', () => existsSync(path.join(ws, 'out', 'results.jsonl')), 15_000);
  }
  // The provider's side of a pod the node plays: once the stand-in ended the container, its sshd goes with it.
  const deathWatch = layout.provider
    ? setInterval(() => {
        if (simContainerDead(home)) {
          clearInterval(deathWatch!);
          void sshd.stop();
        }
      }, 300)
    : null;
  return {
    sshd,
    layout,
    home,
    user,
    stop: async () => {
      if (deathWatch) clearInterval(deathWatch);
      spawnSync('pkill', ['-u', user, '-f', 'sglang.launch_server']);
      spawnSync('pkill', ['-u', user, '-f', 'run_experiment']);
      await sshd.dispose();
    },
  };
}

/**
 * An ssh config naming each simulated node by its alias (loopback, its sshd's port, user and key) and one
 * known_hosts file with all of their host keys, in `dir`: what a user of a fleet of nodes has.
 */
export function writeFleetConfig(dir: string, nodes: Record<string, SimNode>): { cfg: string; kh: string } {
  const cfg = path.join(dir, 'ssh_config');
  const kh = path.join(dir, 'known_hosts');
  const entries = Object.entries(nodes);
  writeFileSync(
    cfg,
    entries
      .map(
        ([alias, n]) =>
          `Host ${alias}\n  HostName 127.0.0.1\n  Port ${n.sshd.port}\n  User ${n.user}\n  IdentityFile ${n.sshd.clientKey}\n`,
      )
      .join(''),
  );
  writeFileSync(kh, entries.map(([, n]) => readFileSync(n.sshd.knownHostsFile, 'utf8')).join(''));
  return { cfg, kh };
}

/**
 * A suite's simulated node and a scratch cache folder, made in `before` (the suite is skipped unless root) and
 * removed in `after`: call inside `describe`, read them through the getters inside the tests.
 */
export function useSimNode(opts: StartSimNodeOptions & { user: string }): { sim: () => SimNode; cache: () => string } {
  let sim: SimNode | undefined;
  let cache: string | undefined;
  before(async function () {
    if (process.getuid?.() !== 0) this.skip();
    cache = mkdtempSync(path.join(os.tmpdir(), `gs-${opts.user}-cache-`));
    sim = await startSimNode(opts);
  });
  after(async () => {
    await sim?.stop();
    if (cache) rmSync(cache, { recursive: true, force: true });
  });
  return { sim: () => sim!, cache: () => cache! };
}
