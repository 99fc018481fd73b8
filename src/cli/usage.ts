/**
 * The text of 'gpu-sessions --help'.
 */
export const USAGE = `gpu-sessions — watch and salvage GPU nodes running SGLang

Usage:
  gpu-sessions nodes [--json]                 list nodes from ssh config
  gpu-sessions resolve NODE [--json]          what GPU Sessions will connect to, in ssh -G's field names (host name,
                                              port, user, identity files, each ProxyJump hop, ProxyCommand,
                                              known_hosts files, host key alias): compare with 'ssh -G NODE'
  gpu-sessions probe NODE [--json] [--price-per-hour USD] [--deadline ISO-8601]
                                              GPUs, SGLang servers and artifacts of a node (one SSH round trip);
                                              the rental's price and end from its provider where it can tell
                                              (runpodctl, vastai), the flags over them
  gpu-sessions salvage NODE --dest DIR [--roots A,B] [--add-root DIR] [--stop-servers] [--drain] [--stop-writers]
                        [--redact] [--no-gitignore] [--include-large] [--size-threshold MiB] [--leave PATH]
                        [--s3 s3://bucket/prefix] [--s3-endpoint URL] [--max-files N] [--max-depth N]
                        [--watch [--interval S] [--grace S]]
                        [--upload-missing [--part-size MiB]] [--deadline ISO] [--download-guarded] [--yes] [--json]
                                              every file under the work's folders saved byte-exact or listed with
                                              why it stays; check S3; environment; whether NODE is safe to shut
                                              down (exit 5 unsafe: still-running, changed-during-run, ...);
                                              --leave PATH accepts leaving weights of unknown origin (repeatable);
                                              files the node's guard verified in S3 count as saved
                                              (--download-guarded downloads them too)
  gpu-sessions parse-log [FILE...] [--json | --summary]
                                              SGLang log lines → stats (stdin when no FILE)
  gpu-sessions tail NODE PATH [--lines N] [--follow] [--stats] [--raw]
                                              follow a remote log; --stats prints a live one-line summary;
                                              --raw passes the log's bytes (ANSI colours) to the terminal as they are
  gpu-sessions launch NODE --profile FILE [--dry-run] [--override] [--ready-timeout S] [--secret NAME=@FILE] [--json]
                                              start a launch profile's servers and wait until they are ready
                                              (--dry-run prints the exact script and the preflight's findings
                                              as warnings, starts nothing, exits 0 for a valid profile);
                                              secrets the profile refers to come from --secret NAME=@FILE
                                              or the environment variable NAME
  gpu-sessions restore RUN_DIR NODE [--map OLD=NEW]... [--include-dotfiles PATH]... [--force] [--launch [--dry-run] [--fill] [--resume-client]] [--yes] [--json]
  gpu-sessions restore --from-guard s3://bucket/prefix [--s3-endpoint URL] DIR NODE [--map OLD=NEW]... [--force] [--yes] [--json]
                                              carry a salvaged run to NODE: files byte-exact under their old names
                                              (old home → new home, --map for other folders), then --launch its
                                              servers on the new GPUs (exit 9: conflicts left as they are);
                                              --from-guard: no salvage, the files the node guard verified in S3
                                              (its index there), each checked by SHA-256, read into DIR
  gpu-sessions capture NODE --out FILE        save the running servers as a launch profile
  gpu-sessions stop NODE --port PORT [--drain] stop a server (optionally after its running requests finish)
  gpu-sessions restart NODE --port PORT [--drain]
                                              stop a server and start it again with the same command line
  gpu-sessions watch NODE... [--json] [--interval SECONDS] [--until done|crashed|unhealthy|any]
                 [--price-per-hour USD] [--deadline ISO-8601] [--data PATH[,PATH] | --no-data]
                                              poll nodes; one line per sample and per transition (server
                                              states, failures, lost GPUs, full disks, job done, spend; the
                                              provider's price and end unless the flags are given)
  gpu-sessions release NODE [--via NODE...] [--drain-timeout S] [--dest DIR] [--dry-run] [--yes] [--json]
                                              give a node back without dropping a request: take its servers out
                                              of every gateway routing to them (on NODE and the --via nodes), wait
                                              until they are idle, then salvage with the servers stopped (into
                                              --dest, default ./salvage); exit 0 safe, 5 unsafe
  gpu-sessions end-rental NODE (--stop | --terminate | --shutdown) [--dest DIR] [--dry-run] [--yes] [--json]
                 [--verify-timeout S]
                                              end the rental with the provider's own action (runpodctl, vastai,
                                              or sudo shutdown), run on the node with its own scoped key, only on a
                                              safe salvage verdict (--dest, default ./salvage) that still holds;
                                              verified by the provider's status and SSH going away (default 180 s);
                                              exit 0 ended, 5 refused (reasons), 1 not verified
  gpu-sessions history NODE [--json]          the samples and transitions kept by earlier watch runs
  gpu-sessions data NODE [PATH...] [--json] [--sample N] [--response-field PTR] [--prompt-field PTR]
                 [--thresholds NAME=SHARE,...]
                                              is the generation output any good? judges each output file on the
                                              node (empty, thinking-only, cut, repeated, looping answers) without
                                              copying it; exit 7 when any file is degenerate
  gpu-sessions guard NODE start (--s3 s3://bucket/prefix [--s3-endpoint URL] | --to DIR_ON_NODE) [--interval S]
                 [--data PATHS] [--when-done notify|stop|terminate] [--idle MIN] [--until ISO] [--yes] [--json]
                 [--thresholds NAME=SHARE,...] [--stop-client-on-bad-data]
  gpu-sessions guard NODE status [--json]     guard NODE stop [--json]
                                              a guard that runs ON the node while the laptop sleeps: every interval
                                              it copies new and changed work files (salvage's rules) to S3 or a
                                              folder on the node, verified by SHA-256, checks the data, and acts
                                              when the job is done, at --until or on a shutdown; exit 10 not started
  gpu-sessions mcp [--mcp-dest DIR]...        Model Context Protocol server over stdio for coding agents (tools:
                                              list_nodes, probe_node, tail_log, parse_log, salvage_plan,
                                              salvage_node, release_node and end_rental with confirm: true, salvage_status, watch_node,
                                              data_quality, restore_plan, restore_run with confirm: true);
                                              salvage_node writes only under --mcp-dest (default: current folder)
  gpu-sessions demo [--keep] [--no-salvage] [--dest DIR] [--provider runpod|vast|none] [--guard] [--json]
                                              start the embedded demo node (simulated 7x B200), probe it, and
                                              salvage it against a local S3 (s3rver) that holds part of its data;
                                              it plays a RunPod pod (default) or a Vast instance for end-rental;
                                              --guard: the node runs its own guard (to the local S3, else a folder)
                                              and shows it; the salvage counts what the guard verified in S3
  gpu-sessions demo --fleet [DIR] [--keep] [--no-salvage] [--dest DIR] [--json]
                                              two demo nodes (gpu-demo-a, gpu-demo-b) with a gateway and a multi-node
                                              server: probe both, then release gpu-demo-b the safe way

NODE is a Host alias from ssh config or [user@]host[:port] (or ssh://[user@]host[:port]).

Global options:
  --ssh-config FILE     ssh client config (default ~/.ssh/config)
  --known-hosts FILE    known_hosts file to check and append to (default ~/.ssh/known_hosts)
  --identity FILE       private key to try first (repeatable)
  --accept-new          accept and record an unknown host key (a changed key is always refused)
  --roots DIR,...       directories to scan for artifacts (default: the home, the user's provider volumes
                        such as /workspace or /data, and the SGLang servers' working directories)
  --timeout SECONDS     connect timeout (default 15)
  -v, --verbose         log connection details to stderr (salvage: also its phase timings)
  -h, --help            this help

Exit codes: 0 ok, 2 usage or invalid profile, 3 host-key problem, 4 unreachable or auth failure,
5 salvage verdict unsafe, 6 launch refused by preflight, 7 a launched instance did not become ready (data: a file is degenerate),
8 watch --until: a node became unreachable first, 9 restore: conflicts left as they are (--force), 130 interrupted (Ctrl-C).`;
