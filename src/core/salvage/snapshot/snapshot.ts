/**
 * The environment snapshot of a node, for salvage ("save environment notes" before a node is shut
 * down): GPUs (`nvidia-smi -q`, topology), driver/CUDA, CPU/RAM/disks, OS/kernel, the Python of the
 * SGLang servers with `pip freeze` and the key packages, each server's exact argv, environment and
 * working directory, its /server_info and /metrics, and how the node was reached over SSH.
 *
 * Gathered in ONE exec: a POSIX sh script on stdin (`sh -s`) like the probe, with nonce-delimited
 * sections, every section bounded in size, missing tools recorded as errors (never fatal). Then the
 * servers' HTTP endpoints are read through the pooled SSH connection. Everything is redacted before it
 * leaves this module: argv, environment, server info, metrics, free text, pip freeze lines.
 */
export * from './snapshotTypes';
export * from './snapshotScript';
export * from './snapshotParse';
export * from './snapshotTake';
export * from './snapshotMarkdown';
