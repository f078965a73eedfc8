#!/usr/bin/env bash
# Builds the two base images deploy/Dockerfile takes as build args, from what this machine can
# reach when no container registry is: Debian packages (debootstrap, the mirror the host's own
# apt sources name) and the machine's rustup toolchain (Cargo.toml needs rust 1.94; Debian
# bookworm's rustc is older). Operators with a registry use the Dockerfile's defaults instead.
#
#   govcat-local/debian-runtime:bookworm   minbase + ca-certificates (the runtime stage)
#   govcat-local/rust-builder:<rustc ver>  minbase + gcc, libc6-dev, make, perl, pkg-config,
#                                          python3, python3-pip, unzip + the host toolchain
#
# Prints two lines, RUNTIME_IMAGE=... and BUILDER_IMAGE=..., for scripts/test-image.sh.
# An image already present under its tag is reused (delete it to rebuild). Needs root
# (debootstrap) and a running docker daemon.
set -euo pipefail
suite="${GOVCAT_DEBIAN_SUITE:-bookworm}"
cache="${GOVCAT_DEBOOTSTRAP_CACHE:-/var/cache/govcat-debootstrap}"
log() { printf 'build-local-bases: %s\n' "$*" >&2; }

# The Debian mirror: $GOVCAT_DEBIAN_MIRROR, else the first main archive URI of the host's apt
# sources (deb822 .sources or one-line .list), so no host name is written here.
mirror="${GOVCAT_DEBIAN_MIRROR:-}"
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '/^URIs:/ {for (i = 2; i <= NF; i++) print $i}' | grep -v -- '-security' | head -1 || true)
fi
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null | awk '$1 == "deb" {for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) {print $i; exit}}' | grep -v -- '-security' | head -1 || true)
fi
[ -n "$mirror" ] || { log "no Debian mirror found in /etc/apt; set GOVCAT_DEBIAN_MIRROR"; exit 1; }

sysroot=$(rustc --print sysroot)
rust_version=$(rustc --version | awk '{print $2}')
runtime_tag="govcat-local/debian-runtime:$suite"
builder_tag="govcat-local/rust-builder:$rust_version-$suite"

work=$(mktemp -d "${TMPDIR:-/tmp}/govcat-bases.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$cache"

have() { docker image inspect "$1" >/dev/null 2>&1; }

# The rootfs of a minbase debootstrap, without apt's package lists and caches (the images
# never run apt: the Dockerfile installs nothing when what it needs is already there).
bootstrap() { # DIR INCLUDES
    debootstrap --variant=minbase --include="$2" --cache-dir="$cache" "$suite" "$1" "$mirror" >"$work/debootstrap.log" 2>&1 \
        || { tail -20 "$work/debootstrap.log" >&2; log "debootstrap failed (mirror $mirror)"; exit 1; }
    rm -rf "$1"/var/cache/apt/archives/*.deb "$1"/var/lib/apt/lists/* "$1"/usr/share/doc/* "$1"/usr/share/man/*
}

if have "$runtime_tag"; then
    log "$runtime_tag present"
else
    start=$(date +%s)
    bootstrap "$work/runtime" ca-certificates
    tar -C "$work/runtime" -c . | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'CMD ["/bin/bash"]' - "$runtime_tag" >/dev/null
    rm -rf "$work/runtime"
    log "$runtime_tag built in $(( $(date +%s) - start )) s"
fi

if have "$builder_tag"; then
    log "$builder_tag present"
else
    start=$(date +%s)
    bootstrap "$work/builder" ca-certificates,gcc,libc6-dev,make,perl,pkg-config,python3,python3-pip,unzip
    # The toolchain without its documentation (share/doc is ~800 MB): rustc finds its sysroot
    # relative to its own binary, so the copy works from /usr/local/rust.
    mkdir -p "$work/builder/usr/local/rust" "$work/builder/usr/local/cargo"
    tar -C "$sysroot" --exclude=./share/doc -c . | tar -C "$work/builder/usr/local/rust" -x
    tar -C "$work/builder" -c . | docker import \
        --change 'ENV PATH=/usr/local/cargo/bin:/usr/local/rust/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV CARGO_HOME=/usr/local/cargo' \
        --change 'CMD ["/bin/bash"]' - "$builder_tag" >/dev/null
    rm -rf "$work/builder"
    log "$builder_tag built in $(( $(date +%s) - start )) s"
fi

echo "RUNTIME_IMAGE=$runtime_tag"
echo "BUILDER_IMAGE=$builder_tag"
