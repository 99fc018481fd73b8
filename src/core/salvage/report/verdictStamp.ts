/**
 * What a salvage verdict ("safe to shut down") was true of: the node's server set, its boot and its files.
 * A verdict holds only while the node's probe still matches the stamp taken after the salvage; a restarted
 * server, a reboot or a file that grew or appeared makes it stale (a restarted demo read
 * "✓ salvaged, safe to shut down" while its 7 servers made 13.9 k tok/s).
 */
import type { ProbeResult } from '../../node/probe';

export interface VerdictStamp {
  /** "port:pid" of every server, sorted */
  servers: string;
  /** boot time (probedAt − uptime), to the minute; null when the uptime is unknown */
  bootMin: number | null;
  /** "path:size" of every artifact, sorted (mtime alone changes on a touch; a size change is new data) */
  files: string;
}

export function verdictStamp(p: Pick<ProbeResult, 'servers' | 'uptimeS' | 'probedAt' | 'artifacts'>): VerdictStamp {
  const probed = Date.parse(p.probedAt);
  return {
    servers: p.servers
      .map((s) => `${s.port}:${s.pid}`)
      .sort()
      .join(','),
    bootMin: p.uptimeS !== null && Number.isFinite(probed) ? Math.round((probed / 1000 - p.uptimeS) / 60) : null,
    files: p.artifacts
      .map((a) => `${a.path}:${a.size}`)
      .sort()
      .join('\n'),
  };
}

/** Why the node no longer matches the stamp ("servers changed", "rebooted", "files changed"), or null while it still does. */
export function staleReason(stamp: VerdictStamp, now: VerdictStamp): string | null {
  if (stamp.servers !== now.servers) return 'servers changed';
  // a minute of rounding either way is the same boot
  if (stamp.bootMin !== null && now.bootMin !== null && Math.abs(stamp.bootMin - now.bootMin) > 1) return 'rebooted';
  if (stamp.files !== now.files) return 'files changed';
  return null;
}
