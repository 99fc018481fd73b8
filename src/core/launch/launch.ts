/**
 * Launching, waiting for, capturing and stopping SGLang servers on a node.
 *
 * - `preflight`: ONE exec that checks ports, GPUs, model path and `import sglang` → refusals and warnings.
 * - `launch`: preflight, render, upload the script through stdin (`~/.gpu-sessions/launch/<stamp>-<name>.sh`),
 *   run it (instances start detached), then wait until every instance is ready — readiness line in its log
 *   or /health 200 — with ONE exec per polling round for all logs, bounded by a timeout.
 *   `~/.gpu-sessions/launch/last.sh` keeps the last launched script; the previous one is returned for a diff.
 * - `scanServers`: the node's SGLang servers with pgid, owner and launch-relevant environment (capture, stop).
 * - `stopServer`: find the server by port, optionally drain (running requests → 0 from /metrics, /get_load or
 *   its log), then SIGTERM its process group, wait, SIGKILL after a timeout.
 *
 * Every remote command is a fixed text or built from shq-quoted values; scripts travel on stdin.
 * No `vscode` import.
 */
export * from './launchCommon';
export * from './preflight';
export * from './launchScripts';
export * from './readiness';
export * from './launchRun';
export * from './serverScan';
export * from './stopServer';
