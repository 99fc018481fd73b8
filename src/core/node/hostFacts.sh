# shellcheck shell=sh
# The host facts' sections (POSIX sh), part of the probe and the snapshot: hostname, os-release, kernel, uptime, CPU
# model and cores, memory. Read by parseHostFacts (hostFacts.ts).
#
# hostFactsScript (hostFacts.ts) sets before it:
#   gs_hf_bound        the bytes of /etc/os-release read
# shellcheck disable=SC2154 # gs_hf_bound: set by the header
sec hostname; hostname 2>/dev/null || cat /proc/sys/kernel/hostname 2>/dev/null
sec os; head -c "$gs_hf_bound" /etc/os-release 2>/dev/null
sec kernel; uname -srm 2>/dev/null
sec uptime; cat /proc/uptime 2>/dev/null
sec cpu; grep -m1 -E '^(model name|Model|Hardware)[[:space:]]*:' /proc/cpuinfo 2>/dev/null; nproc 2>/dev/null
sec mem; grep -E '^(MemTotal|MemAvailable|SwapTotal):' /proc/meminfo 2>/dev/null
