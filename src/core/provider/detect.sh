# shellcheck shell=sh
# The provider section of the probe (POSIX sh): the provider's variables from the session's environment,
# /etc/rp_environment, /etc/environment and /proc/1/environ (a command over SSH often does not see the pod's
# variables), `command -v runpodctl vastai`, the DMI files and whether `sudo -n` works. Keys are never printed:
# `set` stands in their place. Read by parseProviderSection (detect.ts).
#
# providerScript (detect.ts) sends a generated header first, then this file. The header sets:
#   gs_pv_re           the pattern of the variables' names kept
# shellcheck disable=SC2154 # gs_pv_re: set by the header
sec provider
pv() { awk -v src="$1" -v re="$gs_pv_re" '{ sub(/^export[ \t]+/, ""); i = index($0, "="); if (i < 2) next; n = substr($0, 1, i - 1);
  if (n !~ re) next; v = substr($0, i + 1); gsub(/^["\047]|["\047]$/, "", v); gsub(/[\t\r]/, " ", v);
  if (n ~ /KEY$/) { if (v == "") next; v = "set" } print src "\t" n "\t" substr(v, 1, 200) }'; }
env 2>/dev/null | pv env
# shellcheck disable=SC2094 # pv's argument is the source's name, printed; pv writes no file
[ -r /etc/rp_environment ] && pv /etc/rp_environment </etc/rp_environment
# shellcheck disable=SC2094 # as above
[ -r /etc/environment ] && pv /etc/environment </etc/environment
[ -r /proc/1/environ ] && { tr '\0' '\n' </proc/1/environ; } 2>/dev/null | pv /proc/1/environ
for b in runpodctl vastai; do p=$(command -v "$b" 2>/dev/null) && printf 'bin\t%s\t%s\n' "$b" "$p"; done
for f in sys_vendor product_name board_asset_tag chassis_asset_tag bios_version bios_vendor; do [ -r "/sys/class/dmi/id/$f" ] && printf 'dmi\t%s\t%s\n' "$f" "$(head -c 200 "/sys/class/dmi/id/$f" | tr -d '\n\t\r')"; done
command -v sudo >/dev/null 2>&1 && sudo -n true </dev/null >/dev/null 2>&1 && printf 'sudo\tok\t1\n'
:
