/** Parsed SGLang server records for tests that do not need a node (capture, launch rendering, flag fidelity). */
import { type SglangServer, serverFromArgv } from '../../src/core/sglang/serverArgv';

export function server(pid: number, port: number, argv: string[], extra: Partial<SglangServer> = {}): SglangServer {
  return {
    pid,
    port,
    host: '127.0.0.1',
    modelPath: null,
    servedModelName: null,
    tp: 1,
    dp: 1,
    speculativeAlgorithm: null,
    reasoningParser: null,
    enableMetrics: false,
    logFile: null,
    cwd: '/root',
    cudaVisibleDevices: null,
    gpus: [],
    args: argv,
    flags: {},
    ...extra,
  };
}

const L = ['python3', '-m', 'sglang.launch_server'];
/** The server `python3 -m sglang.launch_server ARGS` parses to (pid 7, exact argv); `extra` adds record fields such as configText. */
export const srv = (args: string[], extra: Record<string, unknown> = {}) =>
  serverFromArgv({ pid: 7, ppid: 1, exact: true, argv: [...L, ...args], ...extra })!;
