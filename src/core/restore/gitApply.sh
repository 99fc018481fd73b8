# shellcheck shell=sh
# Applies a salvaged `git diff` (on stdin) in the repository $1 on the node, checked first: GS-NOREPO, GS-ALREADY (the
# diff is already applied: left alone), GS-APPLIED, or GS-FAILED and why. Run by gitApplyOperation (nodeOps.ts) as
# `sh -c SCRIPT sh REPO`.
# shellcheck disable=SC2015 # either failing (no folder, no .git) is the same answer
cd "$1" 2>/dev/null && [ -e .git ] || { echo GS-NOREPO; exit 0; }
command -v git >/dev/null 2>&1 || { echo "GS-FAILED git is not installed"; exit 0; }
P=$(mktemp) || exit 3
cat > "$P"
if git apply --reverse --check "$P" 2>/dev/null; then echo GS-ALREADY
elif e=$(git apply --check "$P" 2>&1); then if e=$(git apply "$P" 2>&1); then echo GS-APPLIED; else echo "GS-FAILED $e" | head -n 3; fi
else echo "GS-FAILED $e" | head -n 3; fi
rm -f "$P"
