/**
 * running-servers.sh: a launch script that reproduces the running SGLang servers.
 */
import { SglangServer } from '../sglang/serverArgv';
import { shComment, shJoin, shq } from '../remote/quote';
import { redactArgv } from '../util/redact';

/** A launch script that reproduces the running servers (argv redacted). */
export function renderServersScript(node: string, servers: SglangServer[]): string {
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
    if (s.cwd) L.push(`cd ${shq(s.cwd)}`);
    const env =
      s.cudaVisibleDevices !== null && s.cudaVisibleDevices !== undefined ? `CUDA_VISIBLE_DEVICES=${shq(s.cudaVisibleDevices)} ` : '';
    L.push(`${env}nohup ${shJoin(argv)} > ${shq(s.logFile ?? `sglang_${s.port}.log`)} 2>&1 &`, '');
  }
  return L.join('\n');
}
