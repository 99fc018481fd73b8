/**
 * Builds /proc records exactly as procRecordsLoop prints them (`od -An -v -tx1`: 16 hex pairs a line,
 * each with a leading space), for parser tests that do not start real processes.
 */
function od(b: Buffer): string {
  let out = '';
  for (let i = 0; i < b.length; i += 16)
    out += [...b.subarray(i, i + 16)].map((x) => ' ' + x.toString(16).padStart(2, '0')).join('') + '\n';
  return out;
}

export interface ProcRecordFields {
  pid: number;
  ppid?: number | null;
  cwd?: string;
  fd1?: string;
  fd2?: string;
  /** `CUDA_VISIBLE_DEVICES=…` lines, as the loop greps them. */
  env?: string;
  argv: string[];
}

export function procRecord(r: ProcRecordFields): string {
  const head = Buffer.from(
    [String(r.pid), r.ppid == null ? '' : String(r.ppid), r.cwd ?? '', r.fd1 ?? '', r.fd2 ?? ''].join('\0') + '\0' + (r.env ?? ''),
  );
  const cmdline = Buffer.from(r.argv.map((a) => a + '\0').join(''));
  return `P\x1d${od(head)}\x1d${od(cmdline)}\x1e`;
}

/** The launch scan's extra record: pid, activate flag, "pgid uid", environment lines. */
export function envRecord(pid: number, activate: boolean, pgidUid: string, env: string): string {
  return `E\x1d${od(Buffer.from(`${pid}\0${activate ? 'A' : ''}\0${pgidUid}\0${env}`))}\x1e`;
}
