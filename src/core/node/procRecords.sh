# shellcheck shell=sh
# The /proc records of the processes whose argv mentions sglang (POSIX sh), parsed by parseProcRecords
# (sglang/serverArgv.ts): one \036-terminated record each with pid, ppid, cwd, fd 1 and 2 targets, the environment
# variables a record keeps (the GPUs it sees and SGLang's /health settings), the exact argv, and the text of its
# `--config` file when it has one (the token after `--config`, read relative to its working directory, at most
# 64 KiB). Every field the node's processes control travels hex-encoded (od -tx1), so no argv or path can forge a
# separator. A server's own children (schedulers, detokenizer, DP controller: titled by SGLang) need only pid, ppid
# and argv: their folder, logs and environment are their server's; one grep finds them.
#
# procRecordsLoop (probe.ts) sends a generated header first, then this file. The header sets:
#   gs_own_only        1: another user's processes are skipped before anything is printed (co-tenants)
#   gs_argv_cap        the bytes of one argv read
#   gs_extra()         more records run per process (with $d = /proc/PID), e.g. the launch scan's environment
# shellcheck disable=SC2154 # gs_own_only, gs_argv_cap: set by the header
gs_kp='^sglang::(scheduler|detokenizer|data_parallel_controller)'
gs_kids=" $(grep -l -a -E "$gs_kp" /proc/[0-9]*/cmdline 2>/dev/null | tr '\n' ' ') "
# shellcheck disable=SC2013 # the words are /proc/PID/cmdline paths: no spaces, no globs
for f in $(grep -l -a -e 'sglang' /proc/[0-9]*/cmdline 2>/dev/null); do
  d=${f%/cmdline}
  [ -r "$f" ] || continue
  if [ "$gs_own_only" = 1 ] && [ ! -O "$d" ]; then continue; fi
  gs_pp=; [ -r "$d/status" ] && while read -r gs_k gs_v; do [ "$gs_k" = PPid: ] && { gs_pp=$gs_v; break; }; done 2>/dev/null <"$d/status"
  printf 'P\035'
  case "$gs_kids" in
  *" $f "*) printf '%s\000%s\000\000\000\000' "${d#/proc/}" "$gs_pp" | od -An -v -tx1
    printf '\035'
    head -c "$gs_argv_cap" "$f" 2>/dev/null | od -An -v -tx1 ;;
  *) { printf '%s\000%s\000%s\000%s\000%s\000' "${d#/proc/}" "$gs_pp" \
      "$(readlink "$d/cwd" 2>/dev/null)" "$(readlink "$d/fd/1" 2>/dev/null)" "$(readlink "$d/fd/2" 2>/dev/null)"
    head -c 262144 "$d/environ" 2>/dev/null | tr '\000' '\n' | grep -E '^(CUDA_VISIBLE_DEVICES|SGLANG_HEALTH_CHECK_TIMEOUT|SGLANG_ENABLE_HEALTH_ENDPOINT_GENERATION)='; } | od -An -v -tx1
  printf '\035'
  head -c "$gs_argv_cap" "$f" 2>/dev/null | od -An -v -tx1
  c=; grep -q -a -e --config "$f" 2>/dev/null && c=$(tr '\000' '\n' < "$f" 2>/dev/null | awk 'g { print; exit } $0 == "--config" { g = 1 }')
  if [ -n "$c" ]; then printf '\035'; ( cd "$d/cwd" 2>/dev/null && head -c 65536 -- "$c" 2>/dev/null | od -An -v -tx1 ); fi ;;
  esac
  printf '\036'
  gs_extra
done
