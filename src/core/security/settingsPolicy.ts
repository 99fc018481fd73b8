/**
 * Settings that name a file, a command, a host or an endpoint (or make us run commands locally), and those that
 * change what is protected or alerted, are the user's alone: a repository's `.vscode/settings.json` must never
 * choose them. package.json marks them `"scope": "machine"` and lists them in
 * `capabilities.untrustedWorkspaces.restrictedConfigurations`; the extension reads them through one accessor
 * that takes only the user's (global) or the default value.
 */
export const MACHINE_SETTINGS: readonly string[] = [
  'nodes',
  'sshConfigFile',
  'includeSshConfigHosts',
  'showLocalMachine',
  'knownHostsFile',
  'salvage.folder',
  'salvage.addRoots',
  'salvage.s3Url',
  'salvage.s3Endpoint',
  'salvage.s3Mappings',
  // What is protected or alerted: a repository must not turn off a crash alert, make a degenerate
  // batch read fine, stop salvage from honouring .gitignore or redacting, or move the rental's end and price.
  'salvage.gitignore',
  'salvage.redact',
  'salvage.sizeThresholdMiB',
  'alerts.pollIntervalSeconds',
  'alerts.crash',
  'alerts.oom',
  'alerts.kvPressure',
  'alerts.hang',
  'alerts.nccl',
  'alerts.gpu',
  'alerts.jobDone',
  'alerts.diskFull',
  'alerts.unreachable',
  'alerts.dpImbalance',
  'alerts.acceptDrop',
  'alerts.deadline',
  'alerts.dataDegenerate',
  'alerts.dataSuspect',
  'pricePerHour',
  'nodePricePerHour',
  'rentalDeadlines',
  'deadlineWarningMinutes',
  'data.intervalSeconds',
  'data.thresholds',
];

export function isMachineSetting(key: string): boolean {
  return MACHINE_SETTINGS.includes(key.replace(/^gpuSessions\./, ''));
}

/** What VS Code's `inspect()` returns, in the parts that matter here. */
interface SettingLayers<T> {
  defaultValue?: T;
  globalValue?: T;
  workspaceValue?: T;
  workspaceFolderValue?: T;
  globalLanguageValue?: T;
  workspaceLanguageValue?: T;
  workspaceFolderLanguageValue?: T;
}

/** The user's own value of a machine setting: global, else the default; workspace layers are ignored. */
export function machineValue<T>(layers: SettingLayers<T> | undefined, def: T): T {
  if (!layers) return def;
  if (layers.globalValue !== undefined) return layers.globalValue;
  if (layers.defaultValue !== undefined) return layers.defaultValue;
  return def;
}
