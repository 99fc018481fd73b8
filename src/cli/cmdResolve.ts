/**
 * `gpu-sessions resolve NODE [--json]`: what the product will connect to, in `ssh -G`'s field names, so it can be
 * compared with `ssh -G NODE`. Reads the ssh config only: no connection, no DNS, no command run.
 */
import { listNodes } from '../core/ssh/nodes';
import { resolveForDisplay, sshGLines } from '../core/ssh/resolveView';
import { GpuSessionsError } from '../core/util/errors';
import { CliIo, GlobalOpts, usageError } from './cliNode';

export async function cmdResolve(args: string[], g: GlobalOpts, io: CliIo): Promise<number> {
  if (args.length !== 1) usageError('resolve takes exactly one NODE.');
  const arg = args[0];
  if (arg.startsWith('-'))
    usageError(`Refusing the node name "${arg.slice(0, 80)}": a node name may not start with '-' (OpenSSH refuses it too).`);
  const listing = listNodes({ sshConfigFile: g.sshConfig });
  for (const d of listing.diagnostics) io.err(`warning: ${d.file}:${d.line}: ${d.message}\n`);
  const r = resolveForDisplay(arg, listing);
  if (!r)
    usageError(
      `Unknown node "${arg}": not a Host alias in ${g.sshConfig ?? '~/.ssh/config'} and not [user@]host[:port] ` +
        `(or a name ssh refuses).`,
    );
  if ('error' in r) throw new GpuSessionsError('config', `${arg}: ${r.error}`);
  for (const w of r.warnings) io.err(`warning: ${w}\n`);
  if (g.json) {
    const out: Record<string, unknown> = { ...r.view };
    if (r.view.proxyjump !== undefined) out.hops = r.hops;
    io.out(JSON.stringify(out, null, 2) + '\n');
    return 0;
  }
  io.out(sshGLines(r.view).join('\n') + '\n');
  r.hops.forEach((h, i) => {
    io.out(`# ProxyJump hop ${i + 1} of ${r.hops.length}\n`);
    io.out(
      sshGLines(h)
        .map((l) => `  ${l}`)
        .join('\n') + '\n',
    );
  });
  return 0;
}
