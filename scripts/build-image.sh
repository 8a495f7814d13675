#!/usr/bin/env bash
# Builds the hypha-serve-exporter container image with podman, offline from any container registry:
#  1. installs podman & co from Debian if missing (idempotent),
#  2. writes a containers.conf/storage.conf for this host (runc instead of crun; default ulimits
#     this host can grant) under the cache dir,
#  3. builds docker.io/library/debian:trixie-slim locally with mmdebstrap from the host's Debian mirror
#     (once; kept in podman's storage),
#  4. builds the Dockerfile (tag hypha-serve-exporter:<version> and :latest).
# Afterwards "$HSE_CACHE_DIR/podman/podman" runs podman with the same configuration (tests use it).
# Env: HSE_CACHE_DIR (default ~/.cache/hypha-serve-exporter), HSE_DEBIAN_MIRROR (default: first mirror in
# /etc/apt/sources.list*), IMAGE (default hypha-serve-exporter). Prints step lines only.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
step() { printf '[build-image %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"

pkgs=(podman runc catatonit mmdebstrap uidmap fuse-overlayfs netavark aardvark-dns)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "apt-get install ${missing[*]}"
  $SUDO flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO flock /tmp/hypha-serve-exporter-apt.lock apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

cache="${HSE_CACHE_DIR:-$HOME/.cache/hypha-serve-exporter}/podman"
mkdir -p "$cache/storage" "$cache/run" "$cache/tmp"
# crun 1.8 (bookworm) refuses hybrid cgroups -> runc; podman's default nofile/nproc ulimits exceed what
# a host without CAP_SYS_RESOURCE may set -> ask for what it can grant.
nofile="$(ulimit -Hn)"; [ "$nofile" = unlimited ] && nofile=1048576
cat > "$cache/containers.conf.new" <<CONF
[engine]
runtime = "runc"
helper_binaries_dir = ["/usr/lib/podman", "/usr/libexec/podman", "/usr/local/libexec/podman"]
[network]
network_backend = "netavark"
[containers]
default_ulimits = ["nofile=${nofile}:${nofile}", "nproc=8192:8192"]
CONF
cat > "$cache/storage.conf.new" <<CONF
[storage]
driver = "overlay"
graphroot = "$cache/storage"
runroot = "$cache/run"
CONF
for f in containers.conf storage.conf; do
  cmp -s "$cache/$f.new" "$cache/$f" 2>/dev/null && rm "$cache/$f.new" || mv "$cache/$f.new" "$cache/$f"
done
cat > "$cache/podman.new" <<WRAP
#!/bin/sh
# podman with the configuration scripts/build-image.sh wrote for this host.
export CONTAINERS_CONF="$cache/containers.conf" CONTAINERS_STORAGE_CONF="$cache/storage.conf" TMPDIR="$cache/tmp"
exec podman "\$@"
WRAP
chmod +x "$cache/podman.new"; mv "$cache/podman.new" "$cache/podman"
pm="$cache/podman"

base=docker.io/library/debian:trixie-slim
if ! "$pm" image exists "$base"; then
  mirror="${HSE_DEBIAN_MIRROR:-}"
  if [ -z "$mirror" ]; then
    mirror="$(grep -hoE '^URIs:[[:space:]]*\S+' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}' | grep -v -- '-security' | grep -m1 debian || true)"
    [ -n "$mirror" ] || mirror="$(grep -hoE '^deb[[:space:]]+\S+' /etc/apt/sources.list 2>/dev/null | awk '{print $2}' | grep -m1 debian || true)"
    [ -n "$mirror" ] || mirror=http://deb.debian.org/debian
  fi
  step "mmdebstrap trixie minbase from $mirror (first time: about 30 s)"
  tar="$cache/tmp/trixie-slim.tar"
  $SUDO mmdebstrap --quiet --variant=minbase --mode=root \
    --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/doc/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
    --aptopt='Acquire::Retries "3"' \
    trixie "$tar" "$mirror"
  "$pm" import --quiet --change 'CMD ["bash"]' "$tar" "$base" >/dev/null
  rm -f "$tar"
fi

image="${IMAGE:-hypha-serve-exporter}"
version="$(node -p 'require("./package.json").version')"
revision="$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)"
# npm inside the build reaches the registry through whatever TLS setup the host has: hand its CA bundle
# (HSE_BUILD_CA_FILE, else npm's cafile, else NODE_EXTRA_CA_CERTS) to the build as a secret, never a layer.
ca="${HSE_BUILD_CA_FILE:-}"
[ -n "$ca" ] || ca="$(npm config get cafile 2>/dev/null || true)"
{ [ -n "$ca" ] && [ "$ca" != null ] && [ "$ca" != undefined ]; } || ca="${NODE_EXTRA_CA_CERTS:-}"
secret_args=()
[ -n "$ca" ] && [ -f "$ca" ] && secret_args=(--secret "id=build_ca,src=$ca")
step "podman build $image:$version (revision $revision)"
"$pm" build --quiet --pull=never --network host --format docker --build-arg "REVISION=$revision" "${secret_args[@]}" \
  -t "$image:$version" -t "$image:latest" -f Dockerfile . >/dev/null
# Each source change leaves the previous build stage behind as an untagged image (~700 MB): drop those
# older than a day, keep today's as the layer cache of the next build.
"$pm" image prune -f --filter until=24h >/dev/null 2>&1 || true
step "ready: $image:$version $("$pm" image inspect --format '{{.Size}}' "$image:$version") bytes; run podman as $pm"
