/**
 * The provider's own commands, run on the node with the node's own scoped key (providers.md §1.2, §2.2):
 * described operations for the one runner. The key is put into the environment of the one command (never argv,
 * never the product's output); the user's own provider key is never part of any of these. Every argument is quoted.
 * Exit statuses are not trusted (both CLIs exit 0 on failures): the status operation's words decide.
 */
import type { RemoteOperation } from '../remote/operation';
import { shq } from '../util/quote';
import type { ExecResult } from '../ssh/transport';
import type { ProviderAction, ProviderInfo } from './detect';
import { InstanceStatus, parseRunpodLegacyTable, parseRunpodPodGet, parseVastShowInstance, runpodV2Missing } from './status';

const OUT = 256 * 1024;
const text = (b: Buffer | string) => b.toString();

/** Sources the pod's variables when the SSH session lacks them (the key stays inside the node's shell). */
const RP_ENV = `[ -n "\${RUNPOD_API_KEY:-}" ] || { [ -r /etc/rp_environment ] && . /etc/rp_environment; } 2>/dev/null
[ -n "\${RUNPOD_API_KEY:-}" ] || RUNPOD_API_KEY=$( { tr '\\0' '\\n' </proc/1/environ; } 2>/dev/null | sed -n 's/^RUNPOD_API_KEY=//p' | head -n 1)
export RUNPOD_API_KEY`;
const VAST_ENV = `[ -n "\${CONTAINER_API_KEY:-}" ] || CONTAINER_API_KEY=$( { cat /etc/environment; tr '\\0' '\\n' </proc/1/environ; } 2>/dev/null | sed -n 's/^CONTAINER_API_KEY=//p' | head -n 1 | tr -d '"')`;

/** The status of the instance, read on the node (v2 `pod get`, else the legacy table; Vast `show instance --raw`). */
export function statusOperation(p: ProviderInfo & { instanceId: string }): RemoteOperation<InstanceStatus> {
  const id = shq(p.instanceId);
  const script =
    p.name === 'runpod'
      ? `${RP_ENV}\nrunpodctl pod get ${id} 2>"\${TMPDIR:-/tmp}/gs-rp.$$"; rc=$?; e=$(head -c 4096 "\${TMPDIR:-/tmp}/gs-rp.$$"); rm -f "\${TMPDIR:-/tmp}/gs-rp.$$"
case "$e" in *'unknown command "pod"'*) printf '\\n@@legacy@@\\n'; runpodctl get pod ${id} -a 2>/dev/null ;; *) printf '\\n@@rc=%s@@\\n%s' "$rc" "$e" ;; esac`
      : `${VAST_ENV}\nVAST_API_KEY="$CONTAINER_API_KEY" vastai show instance ${id} --raw 2>&1`;
  return {
    name: `${p.name}-status`,
    command: 'sh -s',
    stdin: script,
    timeoutMs: 30_000,
    maxOutputBytes: OUT,
    idempotent: true,
    parse: (r: ExecResult) => parseStatusOutput(p.name, p.instanceId, text(r.stdout)),
  };
}

/** Parse statusOperation's stdout (exported for tests). */
export function parseStatusOutput(name: ProviderInfo['name'], id: string, out: string): InstanceStatus {
  if (name !== 'runpod') return parseVastShowInstance(out);
  const legacy = out.indexOf('\n@@legacy@@\n');
  if (legacy >= 0) return parseRunpodLegacyTable(out.slice(legacy + 12), id);
  const m = /\n@@rc=(\d+)@@\n([\s\S]*)$/.exec(out);
  if (!m) return parseRunpodPodGet(out, '', null);
  const stdout = out.slice(0, m.index);
  if (runpodV2Missing(stdout, m[2])) return parseRunpodPodGet('', '', 1);
  return parseRunpodPodGet(stdout, m[2], Number(m[1]));
}

/** The exact command line of the provider's action, as --dry-run prints it (the key named, never its value). */
export function actionCommand(p: ProviderInfo & { instanceId: string }, action: ProviderAction): string {
  const id = shq(p.instanceId);
  if (action === 'shutdown') return 'sudo -n shutdown -h now';
  if (p.name === 'runpod') return action === 'stop' ? `runpodctl pod stop ${id}` : `runpodctl pod delete ${id}`;
  if (p.name === 'vast')
    return action === 'stop'
      ? `VAST_API_KEY="$CONTAINER_API_KEY" vastai stop instance ${id}`
      : `VAST_API_KEY="$CONTAINER_API_KEY" vastai destroy instance ${id} -y`;
  throw new Error(`${p.name} has no ${action} from the node`);
}

/** One provider call on the node; its printed answer is kept (bounded) as evidence, never as the verdict. */
export function actionOperation(
  p: ProviderInfo & { instanceId: string },
  action: ProviderAction,
): RemoteOperation<{ code: number | null; said: string }> {
  const env = action === 'shutdown' ? '' : p.name === 'runpod' ? RP_ENV : VAST_ENV;
  return {
    name: `${p.name}-${action}`,
    command: 'sh -s',
    stdin: `${env}\n${actionCommand(p, action)} </dev/null 2>&1 | head -c 4096`,
    timeoutMs: 60_000,
    maxOutputBytes: 8192,
    acceptTruncated: true,
    parse: (r: ExecResult) => ({ code: r.code, said: text(r.stdout).trim().slice(0, 2000) }),
  };
}

interface EndCallResult {
  code: number | null;
  said: string;
  /** The provider's status read in the same exec right after the call (a stopped pod's container dies soon). */
  status: InstanceStatus | null;
}

const ACTION_RC = /\n@@action-rc=(\d*)@@\n/;

/**
 * The one provider call of end-rental and, in the same exec, the provider's status right after it (providers.md
 * §1.3: once stopped, nothing can run on the node any more). `shutdown` reads no status.
 */
export function endOperation(p: ProviderInfo & { instanceId: string | null }, action: ProviderAction): RemoteOperation<EndCallResult> {
  const withStatus = action !== 'shutdown' && p.instanceId !== null && (p.name === 'runpod' || p.name === 'vast');
  const env = action === 'shutdown' ? '' : p.name === 'runpod' ? RP_ENV : VAST_ENV;
  const call =
    action === 'shutdown'
      ? actionCommand({ ...p, instanceId: '' }, 'shutdown')
      : actionCommand(p as ProviderInfo & { instanceId: string }, action);
  const f = '"${TMPDIR:-/tmp}/gs-end.$$"';
  const status = withStatus ? String(statusOperation(p as ProviderInfo & { instanceId: string }).stdin) : '';
  return {
    name: `${p.name}-${action}`,
    command: 'sh -s',
    stdin: `${env}\n${call} </dev/null >${f} 2>&1; rc=$?\nhead -c 4096 ${f}; rm -f ${f}\nprintf '\\n@@action-rc=%s@@\\n' "$rc"\n${status}\n`,
    timeoutMs: 90_000,
    maxOutputBytes: OUT,
    parse: (r: ExecResult) => {
      const out = text(r.stdout);
      const m = ACTION_RC.exec(out);
      if (!m) return { code: r.code, said: out.trim().slice(0, 2000), status: null };
      const said = out.slice(0, m.index).trim().slice(0, 2000);
      const rest = out.slice(m.index + m[0].length);
      return {
        code: m[1] === '' ? null : Number(m[1]),
        said,
        status: withStatus ? parseStatusOutput(p.name, p.instanceId as string, rest) : null,
      };
    },
  };
}

/**
 * The provider's status read on THIS machine with the user's own key (RUNPOD_API_KEY / VAST_API_KEY in the local
 * environment) and the provider's CLI on the local PATH: verification once the node no longer answers. It runs
 * only locally; the user's key is never part of anything sent to the node. Prints nothing when no key or CLI is here.
 */
export function localStatusOperation(p: ProviderInfo & { instanceId: string }): RemoteOperation<InstanceStatus | null> {
  const id = shq(p.instanceId);
  const script =
    p.name === 'runpod'
      ? `[ -n "\${RUNPOD_API_KEY:-}" ] && command -v runpodctl >/dev/null 2>&1 || exit 0
f="\${TMPDIR:-/tmp}/gs-rpl.$$"; printf '@@local@@\\n'; runpodctl pod get ${id} 2>"$f"; rc=$?; e=$(head -c 4096 "$f"); rm -f "$f"
case "$e" in *'unknown command "pod"'*) printf '\\n@@legacy@@\\n'; runpodctl get pod ${id} -a 2>/dev/null ;; *) printf '\\n@@rc=%s@@\\n%s' "$rc" "$e" ;; esac`
      : `[ -n "\${VAST_API_KEY:-}" ] && command -v vastai >/dev/null 2>&1 || exit 0
printf '@@local@@\\n'; vastai show instance ${id} --raw 2>&1`;
  return {
    name: `${p.name}-status-local`,
    command: 'sh -s',
    stdin: script,
    timeoutMs: 30_000,
    maxOutputBytes: OUT,
    idempotent: true,
    parse: (r: ExecResult) => {
      const out = text(r.stdout);
      if (!out.startsWith('@@local@@\n')) return null;
      return parseStatusOutput(p.name, p.instanceId, out.slice(10));
    },
  };
}
