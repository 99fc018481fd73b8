# shellcheck shell=sh
# The python section of the launch preflight (launch/preflight.sh; not sent for a preview): the profile's preamble,
# then whether the interpreter imports sglang and its version, within 90 s where timeout exists.
#
# buildPreflightScript (preflight.ts) defines before it:
#   gs_py              the interpreter (lower case, like every name here: the preamble exports the profile's
#                      environment, which must not replace it)
#   preamble()         the profile's preamble (cd, venv, environment), failing with GS-ERROR lines
# shellcheck disable=SC2154 # gs_py: set by the header
sec python; (
  preamble
  T=; if command -v timeout >/dev/null 2>&1; then T="timeout 90"; fi
  $T "$gs_py" -c 'import sys, sglang; sys.stdout.write("GS-SGLANG %s\n" % getattr(sglang, "__version__", "unknown"))' 2>&1
  echo "GS-RC $?"
) 2>&1 | tail -n 25
