/**
 * launch_server flags that 2026 SGLang removed (PR #38375, Sept 2026: the deprecated MoE switches), with what
 * replaces each. A profile or capture that keeps an old spelling fails at argparse on a new SGLang; the launch
 * preflight warns with the replacement (shared/reference/sglang-fidelity-round2.md, N6). No `vscode` import.
 */

/** Old flag → what to write instead. */
const REMOVED_FLAGS: Readonly<Record<string, string>> = {
  '--enable-ep-moe': '--ep-size N',
  '--enable-deepep-moe': '--moe-a2a-backend deepep',
  '--enable-flashinfer-cutlass-moe': '--moe-runner-backend flashinfer_cutlass',
  '--enable-flashinfer-trtllm-moe': '--moe-runner-backend flashinfer_trtllm',
  '--enable-flashinfer-mxfp4-moe': '--moe-runner-backend flashinfer_mxfp4',
  '--enable-triton-kernel-moe': '--moe-runner-backend triton_kernel',
};

/** The removed flags among `args` (`--flag` or `--flag=value`), each once, in order, with its replacement. Any
 *  other `--enable-…-moe` switch is of the same family: `--moe-runner-backend`. */
export function removedFlags(args: readonly unknown[]): Array<{ flag: string; use: string }> {
  const out: Array<{ flag: string; use: string }> = [];
  const seen = new Set<string>();
  for (const a of args) {
    if (typeof a !== 'string' || !a.startsWith('--')) continue;
    const flag = a.split('=', 1)[0];
    if (seen.has(flag)) continue;
    const use = REMOVED_FLAGS[flag] ?? (/^--enable-[a-z0-9-]+-moe$/.test(flag) ? '--moe-runner-backend <backend>' : undefined);
    if (use === undefined) continue;
    seen.add(flag);
    out.push({ flag, use });
  }
  return out;
}
