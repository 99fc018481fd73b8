/**
 * Which provider rents this node, read from the node's own environment and files only — never a network
 * endpoint: the session's environment, /etc/rp_environment, /etc/environment, /proc/1/environ (a command over SSH
 * often does not see the pod's variables), `command -v runpodctl vastai`, the DMI files and whether `sudo -n` works.
 * The script is one section of the probe's round trip; its output is hostile and parsed as data. Keys are never
 * printed: the script writes `set` in their place.
 */
import { nodeScript } from '../util/nodeScripts';
import { shq } from '../util/quote';

export type ProviderName = 'runpod' | 'vast' | 'aws' | 'gcp' | 'azure' | 'lambda' | 'unknown';
export type ProviderAction = 'stop' | 'terminate' | 'shutdown';

export interface ProviderInfo {
  name: ProviderName;
  instanceId: string | null;
  /** Where each fact came from ("RUNPOD_POD_ID in /etc/rp_environment", "runpodctl on PATH"). */
  evidence: string[];
  /** The actions this node can actually take. */
  actions: ProviderAction[];
}

const VARS = ['RUNPOD_POD_ID', 'RUNPOD_VOLUME_ID', 'RUNPOD_API_KEY', 'CONTAINER_ID', 'VAST_CONTAINERLABEL', 'CONTAINER_API_KEY'];
const AZURE_TAG = '7783-7084-3265-9085-8269-3286-77';

/** The sh fragment (after sectionPrologue) that prints the `provider` section: `SOURCE<TAB>NAME<TAB>VALUE` lines. */
export function providerScript(): string {
  return `gs_pv_re=${shq(`^(${VARS.join('|')})$`)}\n${nodeScript('provider/detect.sh')}`;
}

const ID_RE = /^[A-Za-z0-9._-]{1,64}$/;

/** Parse the `provider` section (hostile text) into a ProviderInfo. */
export function parseProviderSection(text: string): ProviderInfo {
  const vars = new Map<string, { value: string; src: string }>();
  const bins = new Map<string, string>();
  const dmi = new Map<string, string>();
  let sudo = false;
  for (const line of text.split('\n')) {
    const [src, name, ...rest] = line.split('\t');
    const value = rest.join('\t').trim();
    if (!src || !name) continue;
    if (src === 'bin') bins.set(name, value);
    else if (src === 'dmi') dmi.set(name, value);
    else if (src === 'sudo') sudo = true;
    else if (VARS.includes(name) && value && !vars.has(name))
      vars.set(name, { value, src: src === 'env' ? 'the session environment' : src });
  }
  const evidence: string[] = [];
  const ev = (n: string) => {
    const v = vars.get(n);
    if (v) evidence.push(`${n}${n.endsWith('KEY') ? ' (set)' : ''} in ${v.src}`);
    return v?.value ?? null;
  };
  const shutdown: ProviderAction[] = sudo ? ['shutdown'] : [];
  if (sudo) evidence.push('sudo -n works');
  const podId = vars.get('RUNPOD_POD_ID')?.value ?? null;
  if (podId) {
    const id = ev('RUNPOD_POD_ID');
    const key = ev('RUNPOD_API_KEY');
    const volume = ev('RUNPOD_VOLUME_ID');
    const cli = bins.get('runpodctl');
    if (cli) evidence.push('runpodctl on PATH');
    const can = !!(cli && key && id && ID_RE.test(id));
    const actions: ProviderAction[] = can ? (volume ? ['terminate'] : ['stop', 'terminate']) : [];
    return { name: 'runpod', instanceId: id && ID_RE.test(id) ? id : null, evidence, actions: [...actions, ...shutdown] };
  }
  const cid = vars.get('CONTAINER_ID')?.value ?? vars.get('VAST_CONTAINERLABEL')?.value.replace(/^C\./, '') ?? null;
  if (cid) {
    ev('CONTAINER_ID');
    ev('VAST_CONTAINERLABEL');
    const key = ev('CONTAINER_API_KEY');
    const cli = bins.get('vastai');
    if (cli) evidence.push('vastai on PATH');
    const ok = /^[0-9]{1,20}$/.test(cid);
    const actions: ProviderAction[] = cli && key && ok ? ['stop', 'terminate'] : [];
    return { name: 'vast', instanceId: ok ? cid : null, evidence, actions: [...actions, ...shutdown] };
  }
  const vendor = dmi.get('sys_vendor') ?? '';
  const product = dmi.get('product_name') ?? '';
  const dmiEv = (f: string) => evidence.push(`/sys/class/dmi/id/${f} = ${JSON.stringify(dmi.get(f))}`);
  if (/^Amazon EC2$/i.test(vendor) || /amazon/i.test(dmi.get('bios_version') ?? '')) {
    dmiEv(vendor ? 'sys_vendor' : 'bios_version');
    const tag = dmi.get('board_asset_tag') ?? '';
    return { name: 'aws', instanceId: /^i-[0-9a-f]{8,32}$/.test(tag) ? tag : null, evidence, actions: shutdown };
  }
  if (/^Google/i.test(vendor) || /Google Compute Engine/i.test(product)) {
    dmiEv(vendor ? 'sys_vendor' : 'product_name');
    return { name: 'gcp', instanceId: null, evidence, actions: shutdown };
  }
  if (dmi.get('chassis_asset_tag') === AZURE_TAG || (/^Microsoft Corporation$/i.test(vendor) && /^Virtual Machine$/i.test(product))) {
    dmiEv(dmi.get('chassis_asset_tag') === AZURE_TAG ? 'chassis_asset_tag' : 'sys_vendor');
    return { name: 'azure', instanceId: null, evidence, actions: shutdown };
  }
  if (/lambda/i.test(vendor) || /lambda/i.test(product)) {
    dmiEv('sys_vendor');
    return { name: 'lambda', instanceId: null, evidence, actions: shutdown };
  }
  return { name: 'unknown', instanceId: null, evidence, actions: shutdown };
}

/** What billing a plain `--shutdown` leaves running, per provider (providers.md §3). */
export function shutdownCaveat(name: ProviderName): string {
  if (name === 'azure') return 'Azure keeps billing a VM shut down from inside (only a deallocate stops it); end it in the portal.';
  if (name === 'lambda') return 'Lambda bills until the instance is terminated; a shutdown is not documented to end billing.';
  if (name === 'runpod' || name === 'vast') return 'A shut-down container may keep its GPU and disk billed; prefer --stop or --terminate.';
  return 'Some providers (Azure, and any that bill a stopped disk) keep billing a machine that is only shut down.';
}
