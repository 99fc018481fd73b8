#!/usr/bin/env bash
# Installs what the real-VS-Code tests need: Debian packages (Chromium, ripgrep, headers for
# code-server's native modules) and code-server@4.100.3 (newest that supports Node 20) into a cache
# folder outside the repository. Idempotent: a second run only checks and prints "cached".
# Works as root on a fresh Debian 12 with only the npm registry and the Debian mirrors reachable
# (code-server's @vscode/ripgrep would download from GitHub: its download cache is seeded with
# Debian's rg first).
#
# Env: GPU_SESSIONS_E2E_CACHE (default $HOME/.cache/gpu-sessions-e2e), CODE_SERVER_VERSION.
# Prints the code-server entry point on its last line: "code-server: <path>".
set -euo pipefail

CS_VERSION="${CODE_SERVER_VERSION:-4.100.3}"
CACHE="${GPU_SESSIONS_E2E_CACHE:-${HOME:-/root}/.cache/gpu-sessions-e2e}"
PREFIX="$CACHE/code-server-$CS_VERSION"
ENTRY="$PREFIX/node_modules/code-server/out/node/entry.js"
STAMP="$PREFIX/.installed"

t0=$(date +%s)
since() { echo "$(( $(date +%s) - ${1:-$t0} ))s"; }
log() { echo "e2e-setup: $*"; }

# --- Debian packages -----------------------------------------------------------------------------
pkgs=(libkrb5-dev libsecret-1-dev libxkbfile-dev libx11-dev ripgrep chromium fonts-noto-color-emoji python3 make g++ pkg-config)
need=()
for p in "${pkgs[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  t=$(date +%s)
  if [ "$(id -u)" != 0 ]; then
    echo "e2e-setup: missing Debian packages (${need[*]}) and not root: install them first." >&2
    exit 1
  fi
  log "installing Debian packages: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  timeout 900 apt-get update -qq
  timeout 1200 apt-get install -y -qq "${need[@]}" >/dev/null
  log "Debian packages installed in $(since "$t")"
else
  log "Debian packages present"
fi
[ -x /usr/bin/chromium ] || { echo "e2e-setup: /usr/bin/chromium missing after install" >&2; exit 1; }

# --- code-server ---------------------------------------------------------------------------------
node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" != 20 ] && [ -z "${FORCE_NODE_VERSION:-}" ]; then
  echo "e2e-setup: code-server@$CS_VERSION needs Node 20 (found $(node -v))." >&2
  exit 1
fi

if [ -f "$STAMP" ] && [ -f "$ENTRY" ] && [ "$(cat "$STAMP")" = "$CS_VERSION" ] \
  && [ -e "$PREFIX/node_modules/code-server/lib/vscode/node_modules/@vscode/ripgrep/bin/rg" ]; then
  log "code-server $CS_VERSION cached in $PREFIX"
else
  t=$(date +%s)
  rm -rf "$PREFIX"
  mkdir -p "$PREFIX"
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT

  # Which @vscode/ripgrep does this code-server pin, and which ripgrep release does that ask for?
  log "fetching code-server@$CS_VERSION"
  (cd "$work" && timeout 600 npm pack --silent "code-server@$CS_VERSION" >/dev/null)
  tar xzf "$work"/code-server-*.tgz -C "$work" package/lib/vscode/npm-shrinkwrap.json
  rg_versions=$(node -e '
    const s = require(process.argv[1]);
    const v = new Set();
    for (const [k, p] of Object.entries(s.packages || {})) if (k.endsWith("node_modules/@vscode/ripgrep")) v.add(p.version);
    console.log([...v].join(" "));' "$work/package/lib/vscode/npm-shrinkwrap.json")
  tmpdir=$(node -p 'require("os").tmpdir()')
  case "$(node -p process.arch)" in
    x64) target=x86_64-unknown-linux-musl ;;
    arm64) target=aarch64-unknown-linux-musl ;;
    *) echo "e2e-setup: unsupported arch $(node -p process.arch)" >&2; exit 1 ;;
  esac
  for v in ${rg_versions:-1.15.11}; do
    (cd "$work" && timeout 300 npm pack --silent "@vscode/ripgrep@$v" >/dev/null)
    tar xzf "$work/vscode-ripgrep-$v.tgz" -C "$work" package/lib/postinstall.js
    rel=$(sed -n "s/^const VERSION = '\(v[^']*\)'.*/\1/p" "$work/package/lib/postinstall.js")
    rel=${rel:-v13.0.0-10}
    d="$tmpdir/vscode-ripgrep-cache-$v"
    mkdir -p "$d"
    b=$(mktemp -d)
    cp /usr/bin/rg "$b/rg"
    tar czf "$d/ripgrep-$rel-$target.tar.gz" -C "$b" rg
    rm -rf "$b" "$work/package/lib/postinstall.js"
    log "seeded ripgrep download cache $d/ripgrep-$rel-$target.tar.gz (Debian rg)"
  done

  log "installing code-server@$CS_VERSION into $PREFIX (native modules build: takes minutes)"
  echo '{"name":"gpu-sessions-e2e-code-server","private":true}' >"$PREFIX/package.json"
  export npm_config_unsafe_perm=true npm_config_yes=true
  if ! timeout 1500 npm install --prefix "$PREFIX" --no-audit --no-fund --no-save --loglevel=error \
      "code-server@$CS_VERSION" >"$PREFIX/install.log" 2>&1; then
    tail -n 60 "$PREFIX/install.log" >&2
    echo "e2e-setup: code-server install failed (log: $PREFIX/install.log)" >&2
    exit 1
  fi
  [ -f "$ENTRY" ] || { echo "e2e-setup: $ENTRY missing after install" >&2; exit 1; }
  echo "$CS_VERSION" >"$STAMP"
  log "code-server installed in $(since "$t") ($(du -sh "$PREFIX" | cut -f1))"
fi

printf 'bind-addr: 127.0.0.1:0\nauth: none\ncert: false\n' >"$PREFIX/config.yaml"
v=$(timeout 60 node "$ENTRY" --config "$PREFIX/config.yaml" --version 2>/dev/null | tail -n1 || true)
log "code-server --version: ${v:-?}; total $(since)"
echo "code-server: $ENTRY"
