/**
 * running-servers.sh: a launch script that reproduces the running SGLang servers.
 */
import { SglangServer } from '../../sglang/serverArgv';
import { shComment, shJoinPrintable, shqPrintable } from '../../util/quote';
import { redactArgv } from '../../util/redact';

/** A launch script that reproduces the running servers (argv redacted). */
export function renderServersScript(node: string, servers: readonly SglangServer[]): string {
  const L = [
    '#!/bin/bash',
    `# SGLang servers that were running on ${shComment(node)} when it was salvaged (${new Date().toISOString()}).`,
    '# Secrets in flags are redacted. Review before running.',
    'set -e',
    '',
  ];
  for (const s of servers) {
    const argv = redactArgv(s.args);
    // Comments hold numbers and shComment() text only: a log path with a newline cannot end the comment.
    L.push(
      `# pid ${s.pid}, port ${s.port}${s.gpus.length ? `, GPU ${s.gpus.join(',')}` : ''}${s.logFile ? `, log ${shComment(s.logFile)}` : ''}`,
    );
    // Values are quoted for bash (the shebang) by shqPrintable: a control character from the node (ESC, CR)
    // is written as a visible `$'\x1b'` escape, so `cat running-servers.sh` shows exactly what it runs.
    if (s.cwd) L.push(`cd ${shqPrintable(s.cwd)}`);
    const env =
      s.cudaVisibleDevices !== null && s.cudaVisibleDevices !== undefined
        ? `CUDA_VISIBLE_DEVICES=${shqPrintable(s.cudaVisibleDevices)} `
        : '';
    L.push(`${env}nohup ${shJoinPrintable(argv)} > ${shqPrintable(s.logFile ?? `sglang_${s.port}.log`)} 2>&1 &`, '');
  }
  return L.join('\n');
}
