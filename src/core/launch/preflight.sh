# shellcheck shell=sh
# The launch preflight, run on the node in one exec (POSIX sh): the ports listening, the GPUs and their compute
# apps, whether the work folder, the model and the draft model are there, and whether the interpreter imports
# sglang (or, for a preview, only whether it and the venv's sglang folder exist). Read by parsePreflight
# (preflight.ts).
#
# buildPreflightScript (preflight.ts) sends a generated header first, then this file. The header sets:
#   N, sec()           the section marker (remote/sections.ts)
#   gs_workdir         the profile's work folder
#   gs_model, gs_draft the model's and the draft model's paths (gs_has_draft=0 without a draft)
#   gs_py              the interpreter (lower case, like every name here: the preamble exports the profile's
#                      environment, which must not replace them)
#   gs_preview         1: nothing of the node's runs (no venv, no interpreter), see preview_python
#   preview_python()   the python section of a preview
#   preamble()         the profile's preamble (cd, venv, environment), failing with GS-ERROR lines
# shellcheck disable=SC2154 # gs_workdir, gs_model, gs_draft, gs_has_draft, gs_py, gs_preview: set by the header
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
if [ "$gs_preview" = 1 ]; then preview_python; else
sec python; (
  preamble
  T=; if command -v timeout >/dev/null 2>&1; then T="timeout 90"; fi
  $T "$gs_py" -c 'import sys, sglang; sys.stdout.write("GS-SGLANG %s\n" % getattr(sglang, "__version__", "unknown"))' 2>&1
  echo "GS-RC $?"
) 2>&1 | tail -n 25
fi
sec end
