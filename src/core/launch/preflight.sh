# shellcheck shell=sh
# The launch preflight, run on the node in one exec (POSIX sh): the ports listening, the GPUs and their compute
# apps, whether the work folder, the model and the draft model are there; the python section follows (preflight.ts:
# launch/preflightPython.sh, or for a preview only whether the interpreter and the venv's sglang folder exist, so
# that a preview's text holds nothing that runs the node's code). Read by parsePreflight (preflight.ts).
#
# buildPreflightScript (preflight.ts) sends a generated header first, then this file. The header sets:
#   N, sec()           the section marker (remote/sections.ts)
#   gs_workdir         the profile's work folder
#   gs_model, gs_draft the model's and the draft model's paths (gs_has_draft=0 without a draft)
# shellcheck disable=SC2154 # gs_workdir, gs_model, gs_draft, gs_has_draft: set by the header
export LC_ALL=C
path_kind() {
  p=$1; if [ -d "$p" ]; then if [ -f "$p/config.json" ]; then echo dir-config; else echo dir; fi; elif [ -e "$p" ]; then echo not-dir; else echo missing; fi
}
sec listen; awk 'FNR > 1 && $4 == "0A" { print $2 }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
sec ss; if command -v ss >/dev/null 2>&1; then ss -Hltnp 2>/dev/null | head -n 2000; fi
sec gpus; nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>&1; echo "rc=$?"
sec apps; nvidia-smi --query-compute-apps=pid,process_name,used_memory,gpu_uuid --format=csv,noheader,nounits 2>&1 | head -n 1024
sec workdir; if [ -d "$gs_workdir" ]; then echo ok; else echo missing; fi
sec model
# shellcheck disable=SC2164 # where the work folder is missing (its own section), paths are read from the home
( cd "$gs_workdir" 2>/dev/null; path_kind "$gs_model" )
sec draft
# shellcheck disable=SC2164 # as above
if [ "$gs_has_draft" = 1 ]; then ( cd "$gs_workdir" 2>/dev/null; path_kind "$gs_draft" ); else echo none; fi
