# shellcheck shell=sh
# Stops a server on the node: TERM to its process (or its process group), up to a deadline, then KILL to it and its
# descendants; prints GS-GONE-BEFORE, GS-TERM or GS-KILL-FAILED, GS-KILLED, then GS-GONE or GS-ALIVE (parseKill,
# stopServer.ts).
#
# buildKillScript (stopServer.ts) sends a generated header first, then this file. The header sets:
#   alive()            whether the server's process is alive (remote/pidLive.ts)
#   gs_target          what TERM is sent to: the pid, or -PGID (dash's kill takes a group as "-PGID")
#   gs_kill_all        what KILL is sent to: -PGID, or the pid and its descendants
#   gs_descendants     the descendants killed at the end, when not a group (else empty)
#   gs_rounds          how many 0.2 s waits after TERM
# shellcheck disable=SC2154 # gs_target, gs_kill_all, gs_descendants, gs_rounds: set by the header
if ! alive; then echo GS-GONE-BEFORE; exit 0; fi
if e=$(kill -TERM "$gs_target" 2>&1); then echo GS-TERM; else echo "GS-KILL-FAILED $e"; exit 4; fi
i=0
while alive && [ "$i" -lt "$gs_rounds" ]; do sleep 0.2; i=$((i + 1)); done
# shellcheck disable=SC2086 # gs_kill_all: one word per process
if alive; then kill -KILL $gs_kill_all 2>/dev/null; echo GS-KILLED; j=0; while alive && [ "$j" -lt 25 ]; do sleep 0.2; j=$((j + 1)); done; fi
# shellcheck disable=SC2086 # gs_descendants: one word per process
if [ -n "$gs_descendants" ]; then kill -KILL $gs_descendants 2>/dev/null; fi
if alive; then echo GS-ALIVE; else echo GS-GONE; fi
