# shellcheck shell=sh
# The launch scan, run on the node in one exec (POSIX sh): the user, the login environment's launch variables, the
# process table (pid, ppid, pgid, uid), and the /proc records of the SGLang processes (node/procRecords.sh), each
# followed by its environment record: pid, whether its VIRTUAL_ENV has bin/activate, pgid and uid, and its launch
# variables, hex-encoded like the P records. Read by parseScanOutput (serverScan.ts).
#
# buildScanScript (serverScan.ts) sends a generated header first, then this file. The header sets:
#   N, sec()           the section marker (remote/sections.ts)
#   proc_records()     the /proc records loop, calling scan_env for each process
# shellcheck disable=SC2154 # d (/proc/PID): set by the records loop that calls scan_env
gs_env_ere='^(SGLANG_|NCCL_|CUDA_|TORCH_|PYTORCH_|HF_|TRANSFORMERS_|FLASHINFER_|TRITON_|OMP_NUM_THREADS=|TOKENIZERS_PARALLELISM=|NVIDIA_|VIRTUAL_ENV=)'
scan_env() {
  printf 'E\035'
  { printf '%s\000' "${d#/proc/}"
    v=$(tr '\000' '\n' < "$d/environ" 2>/dev/null | sed -n 's/^VIRTUAL_ENV=//p' | head -n 1)
    if [ -n "$v" ] && [ -f "$v/bin/activate" ]; then printf 'A'; fi
    printf '\000%s %s\000' "$(sed 's/.*) //' "$d/stat" 2>/dev/null | cut -d' ' -f3)" "$(awk '/^Uid:/{print $2}' "$d/status" 2>/dev/null)"
    tr '\000' '\n' < "$d/environ" 2>/dev/null | grep -E "$gs_env_ere"; } | od -An -v -tx1
  printf '\036'
}
export LC_ALL=C
sec me; id -u
sec login; env 2>/dev/null | grep -E "$gs_env_ere"
sec ps; ps -e -o pid= -o ppid= -o pgid= -o uid= 2>/dev/null
sec proc
proc_records
sec end
