/**
 * Launch profiles: versioned workspace files (`.gpu-sessions/launch/*.json`) describing how to start
 * SGLang on a node — validated with the field named in every error, rendered to a POSIX sh launch
 * script like the seeds' `launch_tuned.sh` (one server per GPU on ports base+i, or one server with
 * --tp-size/--dp-size), and captured back from the argv of running servers.
 *
 * Every value that goes into the script is shq-quoted; `~` / `~/x` in path fields expand to the
 * remote home ("$HOME"/'x'), nothing else is ever expanded. The script is deterministic (no
 * timestamps), so the diff against the node's last launched script shows only real changes.
 *
 * No `vscode` import.
 */
export * from './profileModel';
export * from './profileValidate';
export * from './profileScript';
export * from './profileCapture';
