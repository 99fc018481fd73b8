/**
 * Why a folder is salvaged, said the way a person would: processes of one kind that give the same reason are
 * grouped ("working directory of 7 SGLang servers (ports 25502–25508)"), not listed one pid at a time.
 */

interface WhyCand {
  why: string;
  detail: string;
  path: string;
}

const PER_PROCESS: Record<string, string> = {
  'server-cwd': 'working directory of',
  'proc-cwd': 'working directory of',
  'proc-fd': 'files open by',
  argv: 'named in the command lines of',
};

/** "25502–25508" for a run of ports, else the list (at most 6). */
export function portRange(ports: number[]): string {
  const p = [...new Set(ports)].sort((a, b) => a - b);
  if (p.length > 1 && p[p.length - 1] - p[0] === p.length - 1) return `${p[0]}–${p[p.length - 1]}`;
  return p.slice(0, 6).join(', ') + (p.length > 6 ? ', …' : '');
}

/**
 * The candidates under one root, in order, grouped: several processes with the same kind of evidence on the
 * same path become one text; a single one keeps `single(c)` (the per-process text).
 */
export function groupedWhy(
  under: WhyCand[],
  root: string,
  single: (c: WhyCand) => string,
  portOf: (pid: number) => number | null,
): string[] {
  const groups = new Map<string, WhyCand[]>();
  for (const c of under) {
    const k = PER_PROCESS[c.why] ? `${c.why}\0${c.path}` : `${c.why}\0${c.path}\0${c.detail}`;
    groups.set(k, [...(groups.get(k) ?? []), c]);
  }
  const texts: string[] = [];
  for (const list of groups.values()) {
    const c = list[0];
    const pids = [...new Set(list.map((x) => Number(x.detail)))];
    let t: string;
    if (pids.length < 2) t = single(c);
    else if (c.why === 'server-cwd') {
      const ports = pids.map(portOf).filter((x): x is number => x !== null);
      t = `${PER_PROCESS[c.why]} ${pids.length} SGLang servers${ports.length ? ` (port${ports.length > 1 ? 's' : ''} ${portRange(ports)})` : ''}`;
    } else t = `${PER_PROCESS[c.why]} ${pids.length} processes (pids ${pids.slice(0, 4).join(', ')}${pids.length > 4 ? ', …' : ''})`;
    const full = c.path === root ? t : `${t}: ${c.path}`;
    if (!texts.includes(full)) texts.push(full);
  }
  return texts;
}
