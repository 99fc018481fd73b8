/**
 * The data-quality reader that runs ON the node: a python3 script, data.py beside this module (python3 is on every
 * SGLang node), fed on stdin, so no file is ever downloaded. It finds or opens each output file, counts its rows
 * (exactly, or estimated past a time budget), reads a bounded sample — the last N rows plus N spread evenly through
 * the file — and prints, per file, counts only: how many sampled rows parsed, how many answers were empty,
 * thinking-only, cut at length, looping, the most frequent answer, length percentiles. Shares, verdicts and reasons
 * are computed by the caller (verdict.ts), so thresholds stay settings of the client.
 *
 * Its configuration travels inside the script as base64 JSON (no name from the user is ever part of a
 * command line). Output: one `@@<nonce>-F@@ {json}` line per file, `@@<nonce>-S@@ {json}` per discovered
 * file left out, and `@@<nonce>-E@@` at the end (a cut-off run is detected, not half-parsed). Python 3.6+.
 */
import { nodeScript } from '../util/nodeScripts';

/** The script's text, after the blank line that follows its configuration (`CFG_B64 = "…"`). */
export function dataNodeScript(): string {
  return `\n${nodeScript('data/data.py')}`;
}
