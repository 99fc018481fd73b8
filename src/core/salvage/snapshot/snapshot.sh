# shellcheck shell=sh
# The environment snapshot, run on the node in one exec (POSIX sh): tools, host facts, CUDA, the server's Python
# (its packages from salvage/snapshot/pyinfo.py and pip freeze), each server's process facts, nvidia-smi -q and topology,
# each section bounded. Its sections are read by parseSnapshotOutput (snapshotParse.ts).
#
# buildSnapshotScript (snapshotScript.ts) sends a generated header first, then this file. The header sets:
#   N, sec()           the section marker (remote/sections.ts)
#   SP                 the first server's pid, or empty
#   LIM_*              the byte bounds of the sections (SNAPSHOT_LIMITS)
#   PYINFO             the text of salvage/snapshot/pyinfo.py, run with `python -c`
#   host_facts()       the host facts' sections (node/hostFacts.ts)
#   servers()          the sections of each server process: alive, cmdline, environ, cwd, exe, python (uses pyfor)
# shellcheck disable=SC2154 # SP, LIM_*, PYINFO: set by the header
export LC_ALL=C
have() { command -v "$1" >/dev/null 2>&1; }
T=$(mktemp -d 2>/dev/null || { mkdir -p "/tmp/gs.$$" && echo "/tmp/gs.$$"; })
TO60=""; TO30=""
if have timeout; then TO60="timeout 60"; TO30="timeout 30"; fi
getenv() { [ -r "/proc/$1/environ" ] && tr '\000' '\n' < "/proc/$1/environ" 2>/dev/null | grep -m1 "^$2=" | cut -d= -f2-; }
pyenv_from() {
  [ -n "$1" ] || return 0
  # `python -m` puts the working directory on sys.path: run where the server runs.
  # shellcheck disable=SC2164 # where cd fails, the Python runs where the snapshot runs
  c=$(readlink "/proc/$1/cwd" 2>/dev/null) && [ -n "$c" ] && cd "$c" 2>/dev/null
  [ -r "/proc/$1/environ" ] || return 0
  for v in PYTHONPATH PYTHONHOME PYTHONUSERBASE PYTHONNOUSERSITE VIRTUAL_ENV CONDA_PREFIX; do
    val=$(getenv "$1" "$v")
    if [ -n "$val" ]; then export "$v=$val"; else unset "$v"; fi
  done
}
ispy() { case "${1##*/}" in python|python[0-9]*|pypy*) return 0;; esac; return 1; }
pyfor() {
  p=$1
  a0=$(head -c 4096 "/proc/$p/cmdline" 2>/dev/null | tr '\000' '\n' | head -n 1)
  r=""
  case "$a0" in
    '') ;;
    /*) r=$a0 ;;
    */*) r="$(readlink "/proc/$p/cwd" 2>/dev/null)/$a0" ;;
    *) pp=$(getenv "$p" PATH); r=$( [ -n "$pp" ] && PATH=$pp; command -v "$a0" 2>/dev/null ) ;;
  esac
  if [ -n "$r" ] && [ -x "$r" ] && [ -f "$r" ]; then
    if ispy "$r"; then printf '%s' "$r"; return; fi
    # A console script (sglang serve): its shebang names the interpreter.
    sb=$(head -c 512 "$r" 2>/dev/null | head -n 1)
    case "$sb" in
      '#!'*) i=${sb#??}
        # shellcheck disable=SC2086 # the shebang's words: the interpreter and its argument
        set -- $i
        if [ "${1##*/}" = env ]; then
          [ "$2" = "-S" ] && shift; i=$( pp=$(getenv "$p" PATH); [ -n "$pp" ] && PATH=$pp; command -v "$2" 2>/dev/null )
        else i=$1; fi
        if [ -n "$i" ] && ispy "$i"; then printf '%s' "$i"; return; fi ;;
    esac
  fi
  readlink "/proc/$p/exe" 2>/dev/null
}
( if have nvidia-smi; then $TO30 nvidia-smi -q >"$T/q" 2>&1; echo $? >"$T/qrc"; else echo "nvidia-smi: command not found" >"$T/q"; echo 127 >"$T/qrc"; fi ) &
( if have nvidia-smi; then $TO30 nvidia-smi topo -m >"$T/t" 2>&1; echo $? >"$T/trc"; fi ) &
sec tools; for x in nvidia-smi timeout lscpu nvcc df python3; do have "$x" && echo "$x"; done
host_facts
sec lscpu; lscpu 2>/dev/null | head -c "$LIM_SMALL"
sec disks; df -kP 2>/dev/null | head -c "$LIM_SMALL"
sec nvcc; if have nvcc; then nvcc --version 2>&1 | head -c 4096
elif [ -x /usr/local/cuda/bin/nvcc ]; then /usr/local/cuda/bin/nvcc --version 2>&1 | head -c 4096; fi
PY=""
if [ -n "$SP" ] && [ -d "/proc/$SP" ]; then PY=$(pyfor "$SP"); ispy "$PY" || PY=""; fi
[ -n "$PY" ] || PY=$(command -v python3 2>/dev/null)
[ -n "$PY" ] || PY=$(command -v python 2>/dev/null)
# pip freeze (the slowest part: pip's own start) runs beside the Python facts and the servers' sections; printed after the wait
if [ -n "$PY" ]; then
  ( pyenv_from "$SP"; PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_INPUT=1 $TO60 "$PY" -m pip freeze --all >"$T/pf" 2>"$T/pfe"; echo $? >"$T/pfrc" ) &
fi
sec python; printf '%s' "$PY"
sec pyinfo
if [ -n "$PY" ]; then ( pyenv_from "$SP"; $TO60 "$PY" -c "$PYINFO" 2>"$T/pye" | head -c "$LIM_PYINFO"; echo $? >"$T/pyrc" ); fi
sec pyinfoerr; head -c 4096 "$T/pye" 2>/dev/null
servers
wait
sec pipfreeze; if [ -n "$PY" ]; then head -c "$LIM_PIPFREEZE" "$T/pf" 2>/dev/null; fi
sec pipfreezerc; cat "$T/pfrc" 2>/dev/null
sec pipfreezeerr; head -c 4096 "$T/pfe" 2>/dev/null
sec smiq; head -c "$LIM_SMIQ" "$T/q" 2>/dev/null
sec smiqrc; cat "$T/qrc" 2>/dev/null
sec topo; head -c "$LIM_TOPOLOGY" "$T/t" 2>/dev/null
sec toporc; cat "$T/trc" 2>/dev/null
rm -rf "$T"
sec end
