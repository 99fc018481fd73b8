/**
 * The node-side snapshot script: POSIX sh on stdin with nonce-delimited sections, each bounded, missing tools recorded as errors.
 */
import { hostFactsScript } from '../../node/hostFacts';
import { shPidLive } from '../../remote/pidLive';
import { sectionPrologue } from '../../remote/sections';
import { nodeScript } from '../../util/nodeScripts';
import { shq } from '../../util/quote';
import { SNAPSHOT_LIMITS } from './snapshotTypes';

/**
 * The snapshot script for `serverPids`: a generated header (the section marker, the first server, the bounds, the
 * Python facts program, the host facts and the per-server sections as functions), then `salvage/snapshot/snapshot.sh`.
 */
export function buildSnapshotScript(nonce: string, serverPids: number[]): string {
  const pids = serverPids.filter((p) => Number.isInteger(p) && p > 0).map((p) => String(p));
  const L = SNAPSHOT_LIMITS;
  const servers = pids.map(
    (p) => `sec srv:${p}:alive; ${shPidLive(Number(p))} && echo yes
sec srv:${p}:cmdline; head -c ${L.cmdline} /proc/${p}/cmdline 2>/dev/null
sec srv:${p}:environ; head -c ${L.environ} /proc/${p}/environ 2>/dev/null
sec srv:${p}:cwd; readlink /proc/${p}/cwd 2>/dev/null
sec srv:${p}:exe; readlink /proc/${p}/exe 2>/dev/null
sec srv:${p}:python; ${shPidLive(Number(p))} && pyfor ${p}`,
  );
  const header = [
    '',
    sectionPrologue(nonce),
    `SP=${pids.length ? pids[0] : '""'}`,
    `LIM_SMALL=${L.small}; LIM_PYINFO=${L.pyInfo}; LIM_PIPFREEZE=${L.pipFreeze}; LIM_SMIQ=${L.smiQ}; LIM_TOPOLOGY=${L.topology}`,
    `PYINFO=${shq(nodeScript('salvage/snapshot/pyinfo.py'))}`,
    `host_facts() {\n${hostFactsScript(L.small)}\n}`,
    `servers() {\n${[':', ...servers].join('\n')}\n}`,
  ];
  return `${header.join('\n')}\n${nodeScript('salvage/snapshot/snapshot.sh')}`;
}

// ------------------------------------------------------------------------------------ parsing
