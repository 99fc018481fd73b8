# shellcheck shell=sh
# The probe's artifact scan (POSIX sh, GNU find): each root as one find, an `R` record per folder scanned and an
# `E` record per root that is missing, an `F` record per file that may be an artifact, a `G` record per git
# repository. With evidence (no roots given), besides the home: the provider volumes that exist and are the
# user's (owned or writable), and the working directories of the user's SGLang servers; a folder inside one already
# scanned is skipped, system folders never count. Off on a simulated node (SCOPE set: it shares the host).
#
# artifactScanScript (probe.ts) sends a generated header first, then this file; it runs inside the probe (probe.sh:
# T, SCOPE). The header sets:
#   EVIDENCE           1: folders come from evidence too; 0: only the roots given
#   gs_find PATH       find's records under PATH (the depth bound, the folders pruned, the names kept)
#   each_root F        F PATH for each root
#   each_volume F      F PATH for each provider volume
# shellcheck disable=SC2154 # T, SCOPE, EVIDENCE: set by the probe and the header
gs_scan() {
  [ -d "$1" ] || { printf 'E\t0\t0\t%s\000' "$1"; return; }
  printf '%s\n' "$1" >>"$T/roots"; printf 'R\t0\t0\t%s\000' "$1"
  gs_find "$1"
}
gs_covered() {
  case "$1" in /|/usr|/usr/*|/etc|/etc/*|/proc|/proc/*|/sys|/sys/*|/dev|/dev/*|/run|/run/*|/var|/var/*|/bin|/sbin|/lib|/lib*|/boot|/boot/*|*'
'*) return 0 ;; esac
  [ -f "$T/roots" ] || return 1
  while IFS= read -r x; do case "$1/" in "$x"/*) return 0 ;; esac; done <"$T/roots"
  return 1
}
gs_volume() {
  [ -d "$1" ] && { [ -O "$1" ] || [ -w "$1" ]; } && ! gs_covered "$1" && gs_scan "$1"
}
{
each_root gs_scan
if [ "$EVIDENCE" = 1 ] && [ -z "$SCOPE" ]; then
  each_volume gs_volume
  for d in /proc/[0-9]*; do
    [ -O "$d" ] || continue
    grep -q -a 'sglang' "$d/cmdline" 2>/dev/null || continue
    c=$(readlink "$d/cwd" 2>/dev/null) || continue
    [ -n "$c" ] && ! gs_covered "$c" && gs_scan "$c"
  done
fi
}
