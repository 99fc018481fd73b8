/** A parsed SGLang server record for tests that do not need a node (capture, launch rendering). */
import type { SglangServer } from '../../src/core/sglang/serverArgv';

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
