# shellcheck shell=sh
# The probe, run on the node in one exec (POSIX sh on stdin): GPUs, the driver's banner and compute apps, disks,
# host facts, the provider's traces, the user's processes and SGLang servers, gateways, a job's progress and the
# artifacts, each in its section. Its sections are read by parseProbeOutput (probe.ts).
#
# buildProbeScript (probe.ts) sends a generated header first, then this file. The header sets:
#   N, sec()           the section marker (remote/sections.ts)
#   SCOPE              the simulated node's folder (empty on a real node)
#   ARGV_CAP           the bytes of one process's argv kept
#   ARTIFACT_MAX       the most artifact records kept (the bound + 1)
#   smi_query()        nvidia-smi with the GPU query's arguments (nvidiaSmi.ts)
#   smi_apps()         nvidia-smi with the compute apps' arguments
#   host_facts()       the host facts' sections (hostFacts.ts)
#   provider()         the provider section (provider/detect.ts)
#   proc_records()     the /proc records of the user's SGLang processes (procRecordsLoop)
#   gateways()         the gateways section (gateway/discover.ts)
#   progress()         the progress section when a job's progress is read, else nothing (progressRead.ts)
#   artifact_scan()    the artifact records (artifactScanScript)
# shellcheck disable=SC2154 # SCOPE, ARGV_CAP, ARTIFACT_MAX: set by the header
export LC_ALL=C
T=$(mktemp -d 2>/dev/null || { mkdir -p "/tmp/gs.$$" && echo "/tmp/gs.$$"; })
( smi_query >"$T/q" 2>&1; echo $? >"$T/qrc" ) &
( nvidia-smi >"$T/b" 2>&1; echo $? >"$T/brc" ) &
( smi_apps >"$T/a" 2>&1 ) &
( df -kP >"$T/d" 2>/dev/null ) &
sec home; printf '%s' "$HOME"
sec scope; printf '%s' "$SCOPE"
host_facts
provider
sec ps; { ps -ww -U "$(id -u)" -o pid=,ppid=,args= 2>/dev/null ||
  ps -U "$(id -u)" -o pid=,ppid=,args= 2>/dev/null ||
  ps -e -o pid=,ppid=,args= 2>/dev/null; } | cut -c 1-"$ARGV_CAP" | head -c 4194304
sec proc
{ proc_records; } | head -c 16777216
gateways
progress
sec artifacts
artifact_scan | head -z -n "$ARTIFACT_MAX" 2>/dev/null
wait
sec disks; cat "$T/d" 2>/dev/null
sec gpus; cat "$T/q" 2>/dev/null
sec gpusrc; cat "$T/qrc" 2>/dev/null
sec banner; cat "$T/b" 2>/dev/null
sec bannerrc; cat "$T/brc" 2>/dev/null
sec apps; cat "$T/a" 2>/dev/null
rm -rf "$T"
sec end
