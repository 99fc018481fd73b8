#!/bin/bash
# Stop the SGLang servers started by launch_all.sh / launch_tuned.sh: SIGTERM, then SIGKILL after 15 s.
# POSIX sh body. Servers are found by their pid files ($HOME/.sim/run/server_<port>.pid: "<pid> <gpu>"),
# which a server removes when it has shut down.
stopping=""
for f in "$HOME"/.sim/run/server_*.pid; do
  [ -f "$f" ] || continue
  read -r pid _rest < "$f" || continue
  if kill "$pid" 2>/dev/null; then
    echo "stopping pid $pid ($(basename "$f" .pid))"
    stopping="$stopping $f"
  else
    rm -f "$f"  # stale: the process is gone
  fi
done
n=0
left="$stopping"
while [ -n "$left" ] && [ "$n" -lt 150 ]; do
  sleep 0.1
  n=$((n + 1))
  still=""
  for f in $left; do
    [ -f "$f" ] && still="$still $f"
  done
  left="$still"
done
for f in $left; do
  read -r pid _rest < "$f" 2>/dev/null && kill -9 "$pid" 2>/dev/null && echo "killed pid $pid (did not stop within 15 s)"
  rm -f "$f"
done
count=0
for f in $stopping; do count=$((count + 1)); done
echo "stopped $count server(s)"
