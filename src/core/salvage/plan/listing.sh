# shellcheck shell=sh
# The salvage listing, run on the node in one exec (POSIX sh, GNU find): the folders where the work is (from
# evidence), every file under them, caches as folders, symlinks, git repositories and the processes still writing.
# Its sections are read by parseListing (listing.ts).
#
# buildListingScript (listing.ts) sends a generated header first, then this file. The header sets:
#   N, sec()           the section marker (remote/sections.ts)
#   DEPTH, MAXN        find's -maxdepth (the depth bound + 1) and the most records kept (the file bound + 1)
#   EXCL               " pid pid " of processes that are not evidence
#   EVIDENCE           1: folders come from evidence; 0: the roots given replace it
#   SCOPE              the simulated node's folder (empty on a real node)
#   CACHE_NAMES        the folder names that are caches, separated by spaces
#   given_roots()      `cand WHY - PATH` for each root given (--roots, --add-root, earlier salvage)
#   each_volume F      F PATH for each provider volume (globs expanded)
#   each_prune F       F PATH for each folder never listed nor entered
#   each_model F       F PATH for each model folder an earlier run found
#   system_dir PATH    0 when PATH never counts as a work folder
#   shm_skip NAME      0 when a /dev/shm entry is a shared-memory segment, not a file of value
#   hf_meta            prints the download metadata of the model folders in $T/m (weights.ts)
# shellcheck disable=SC2154 # N, DEPTH, MAXN, EXCL, EVIDENCE, SCOPE, CACHE_NAMES: set by the header
export LC_ALL=C
T=$(mktemp -d 2>/dev/null) || { T="/tmp/gs-list.$$"; mkdir -p "$T"; }
U=$(id -u)
ME=$$
: > "$T/c"; : > "$T/servers"; : > "$T/k"; : > "$T/m"; : > "$T/prune"
prune_add() {
  x=$1
  [ -d "$x" ] && _y=$(cd -- "$x" 2>/dev/null && pwd -P) && x=$_y
  case "$x" in /?*) printf '%s\n' "$x" >> "$T/prune";; esac
}
each_prune prune_add
pruned() {
  while IFS= read -r _x; do case "$1" in "$_x"|"$_x"/*) return 0;; esac; done < "$T/prune"
  return 1
}
cand() {
  _c=$3
  case "$_c" in /*) ;; *) return 0;; esac
  [ -e "$_c" ] || return 0
  if [ -d "$_c" ]; then _c=$(cd -- "$_c" 2>/dev/null && pwd -P) || return 0; fi
  system_dir "$_c" && return 0
  pruned "$_c" && return 0
  printf '%s\t%s\t%s\n' "$1" "$2" "$_c" >> "$T/c"
}
under_base() {
  while IFS= read -r _b; do case "$1" in "$_b"|"$_b"/*) return 0;; esac; done < "$T/base"
  return 1
}
model_previous() { [ -d "$1" ] && printf 'previous\t%s\n' "$1" >> "$T/m"; }
each_model model_previous
sec home; printf '%s' "$HOME"
sec uid; printf '%s' "$U"
sec scope; printf '%s' "$SCOPE"
volume_cand() { [ -d "$1" ] && [ -O "$1" ] && cand volume - "$1"; }
if [ "$EVIDENCE" = 1 ]; then
  cand home - "$HOME"
  each_volume volume_cand
  for e in /dev/shm/* /dev/shm/.[!.]*; do
    if [ ! -e "$e" ] || [ ! -O "$e" ]; then continue; fi
    shm_skip "${e#/dev/shm/}" && continue
    cand shm - "$e"
  done
fi
given_roots
SP=" "
# a simulated node shares this machine's process table: only processes running from its folder are its servers and
# add folders; another's process still counts as a writer when it writes under them
scoped() { [ -z "$SCOPE" ] && return 0; case "$(readlink "$1/cwd" 2>/dev/null)/" in "$SCOPE"/*) return 0;; esac; return 1; }
# shellcheck disable=SC2013 # /proc/PID/cmdline paths: no spaces
for f in $(grep -l -a -e sglang /proc/[0-9]*/cmdline 2>/dev/null); do
  d=${f%/cmdline}
  if [ ! -O "$d" ] || ! scoped "$d"; then continue; fi
  tr '\000' '\n' < "$f" > "$T/a" 2>/dev/null
  grep -q -x -e 'sglang.launch_server' -e '-msglang.launch_server' -e '.*sglang/launch_server\.py' -e 'serve' "$T/a" || continue
  port=$(sed -n -e '/^--port$/{n;p;q;}' -e 's/^--port=//p' "$T/a" | head -n 1)
  case "$port" in ''|*[!0-9]*) port=30000;; esac
  SP="$SP$(printf '%04X' "$port") "
  echo "${d#/proc/}" >> "$T/servers"
  cw=$(readlink "$d/cwd" 2>/dev/null)
  if [ "$EVIDENCE" = 1 ]; then cand server-cwd "${d#/proc/}" "$cw"; fi
  m=$(sed -n -e '/^--model-path$/{n;p;q;}' -e 's/^--model-path=//p' -e '/^--model$/{n;p;q;}' "$T/a" | head -n 1)
  case "$m" in /*) ;; ?*) m="$cw/$m";; esac
  if [ -n "$m" ] && [ -d "$m" ]; then
    printf 'server\t%s\n' "$(cd -- "$m" 2>/dev/null && pwd -P)" >> "$T/m"
    if [ "$EVIDENCE" = 1 ]; then cand argv "${d#/proc/}" "$m"; fi
  fi
done
# launch scripts (two levels deep in the folders found) name work folders and model folders
if [ "$EVIDENCE" = 1 ]; then
  for s in $(cut -f3- "$T/c" |
      while IFS= read -r b; do
        [ -d "$b" ] && find "$b" -maxdepth 2 -type f \( -name 'launch*.sh' -o -name 'start*.sh' -o -name 'serve*.sh' -o -name 'run*.sh' \) 2>/dev/null
      done | head -n 50); do
    for x in $(grep -a -o -E -e '(^|[ ="'"'"'(])/[A-Za-z0-9._@+-][A-Za-z0-9._@+/-]*' "$s" 2>/dev/null | sed -e 's/^[ ="'"'"'(]//' | sort -u | head -n 200); do
      [ -d "$x" ] && cand script "$s" "$x"
    done
    grep -a -o -E -e '--model(-path)?[= ]+["'"'"']?/[A-Za-z0-9._@+/-]+' "$s" 2>/dev/null |
      sed -e 's/^--model\(-path\)\{0,1\}[= ]*["'"'"']\{0,1\}//' |
      while IFS= read -r x; do [ -d "$x" ] && printf 'script\t%s\n' "$(cd -- "$x" 2>/dev/null && pwd -P)" >> "$T/m"; done
  done
fi
cut -f3- "$T/c" > "$T/base"
# the socket inodes that listen (state 01 after the header) on a server port in SP (none without a server: no awk)
INO="  "
[ "$SP" = " " ] || INO=" $(awk -v sp="$SP" 'BEGIN{n=split(sp,a," ");for(i=1;i<=n;i++)w[a[i]]=1} FNR>1 && $4=="01" {split($3,r,":"); if (r[2] in w) printf "%s ", $10}' /proc/net/tcp /proc/net/tcp6 2>/dev/null) "
sec procs
for d in /proc/[0-9]*; do
  p=${d#/proc/}
  if [ "$p" = "$ME" ] || [ "$p" = "$PPID" ]; then continue; fi
  case "$EXCL" in *" $p "*) continue;; esac
  if [ ! -O "$d" ] || [ ! -e "$d/exe" ]; then continue; fi
  pp=
  while read -r k v; do if [ "$k" = PPid: ]; then pp=$v; break; fi; done < "$d/status" 2>/dev/null
  [ "$pp" = "$ME" ] && continue
  # ours (another operation of this salvage, e.g. the snapshot's temp files) or gone: read before its fds, so one
  # that exits between the two is never taken for a writer (grep: 0 marked, 2 unreadable, 1 someone else's)
  grep -q -a -z -e '^GPU_SESSIONS_OP=' "$d/environ" 2>/dev/null; [ $? -eq 1 ] || continue
  find "$d/cwd" "$d/fd" -maxdepth 1 -printf 'D\t%d\t%f\t%l\000' -fprintf "$T/fd" '%d %f %l\n' > "$T/fdz" 2>/dev/null
  q=
  grep -q -x -e "$p" "$T/servers" && q=s
  cwd=
  : > "$T/pc"
  while read -r dep nm tg; do
    if [ "$dep" = 0 ]; then [ "$nm" = cwd ] && cwd=$tg; continue; fi
    case "$tg" in
      socket:\[*) i=${tg#socket:[}; i=${i%]}; case "$INO" in *" $i "*) q="${q}n";; esac;;
      /*) if under_base "$tg"; then
          fl=; while read -r k v; do if [ "$k" = flags: ]; then fl=$v; break; fi; done < "$d/fdinfo/$nm" 2>/dev/null
          case "$fl" in *[1235679]) q="${q}f";; esac
        fi
        printf '%s\n' "${tg%/*}" >> "$T/pc";;
    esac
  done < "$T/fd"
  [ -n "$cwd" ] && under_base "$cwd" && q="${q}c"
  [ -z "$q" ] && [ ! -s "$T/pc" ] && continue
  printf 'P\t%s\t%s\t%s\000' "$p" "$pp" "$q"
  cat "$T/fdz"
  printf 'A\t'; tr '\000' '\037' < "$d/cmdline" 2>/dev/null; printf '\000'
  printf 'I\t'; grep -s -H '^flags' "$d"/fdinfo/* 2>/dev/null; printf '\000'
  if [ "$EVIDENCE" = 1 ] && [ -n "$q" ] && scoped "$d"; then
    [ -n "$cwd" ] && cand proc-cwd "$p" "$cwd"
    sort -u "$T/pc" | while IFS= read -r x; do cand proc-fd "$p" "$x"; done
    tr '\000' '\n' < "$d/cmdline" 2>/dev/null | while IFS= read -r a; do a=${a#--*=}; case "$a" in /*) [ -d "$a" ] && cand argv "$p" "$a";; esac; done
  fi
done
sec cands; cat "$T/c"
sec models; cat "$T/m"
sec hfmeta
# no model folder, nothing to read (and no process started for it)
if [ -s "$T/m" ]; then hf_meta; fi
# nested folders collapse into their parent
cut -f3- "$T/c" | sed 's|$|/|' | sort -u | awk 'k != "" && index($0, k) == 1 { next } { k = $0; print }' | sed 's|/$||' > "$T/roots"
sec roots; cat "$T/roots"
sec realroots; while IFS= read -r r; do readlink -f -- "$r" 2>/dev/null || printf '%s\n' "$r"; done < "$T/roots"
sec files
set --
while IFS= read -r r; do set -- "$@" "$r"; done < "$T/roots"
if [ $# -gt 0 ]; then
  set -- "$@" -maxdepth "$DEPTH"
  # a pruned folder is never entered (find -path takes a pattern: its glob characters are escaped, one sed for all)
  sed 's/[][*?\\]/\\&/g' "$T/prune" > "$T/prunep"
  while IFS= read -r x; do set -- "$@" -path "$x" -prune -o; done < "$T/prunep"
  set -- "$@" \( -type d -name .git -printf 'G\t%d\t0\t0\t%h\000' -prune \) -o \( -type d \(
  _or=
  for c in $CACHE_NAMES; do
    if [ -n "$_or" ]; then set -- "$@" -o; fi
    set -- "$@" -name "$c"; _or=1
  done
  set -- "$@" \) -printf 'C\t%d\t0\t0\t%p\000' -fprintf "$T/k" '%p\n' -prune \)
  find "$@" \
    -o \( -type f -printf 'F\t%d\t%s\t%T@\t%p\000' \) \
    -o \( -type l -printf 'L\t%d\t%s\t%T@\t%p\t%l\000' \) \
    -o \( -type d -printf 'd\t%d\t0\t0\t%p\000' \) 2>/dev/null | head -z -n "$MAXN"
fi
sec caches
[ -s "$T/k" ] && xargs -d '\n' -r sh -c 'find "$@" -type f -printf "%H\t%s\n" 2>/dev/null' _ < "$T/k" |
  awk -F'\t' '{n[$1]++; s[$1]+=$2} END {for (k in n) printf "%s\t%d\t%.0f\n", k, n[k], s[k]}'
rm -rf "$T"
sec end
