#!/usr/bin/env bash
# Builds (once) the Debian chroots that hold the real Ironic releases the
# conformance suite compares the sidecar with:
#
#   bullseye  Ironic 16.0 (Victoria)
#   bookworm  Ironic 21.4 (2023.1)
#   trixie    Ironic 29.0 (2025.1)
#   sid       the newest Ironic in Debian
#
# Each chroot is made with `debootstrap --variant=minbase` from the Debian
# mirror the machine is configured with (/etc/apt/sources.list*) and gets
# python3-ironic, python3-psycopg2 and python3-pymysql. The chroots live
# OUTSIDE the clone, in $CHROOT_CACHE (default
# /var/cache/ironic-conductor-exporter/chroots), one directory per suite; a
# chroot is rebuilt only when its stamp file is missing (an interrupted build
# leaves none, and is started again from scratch).
#
# The suites missing are built in parallel (debootstrap is mostly waiting for
# the mirror; each build logs to $CHROOT_CACHE/SUITE.debootstrap.log).
#
# Usage: conformance/chroots.sh [SUITE...]   (default: bullseye trixie sid;
#        bookworm, the host's own release, is built only when named)
# Prints one line per suite: "SUITE DIR IRONIC_VERSION BUILD_SECONDS", then
# "chroots ready in Ns". Exits non-zero when any build failed.
# Needs root (debootstrap, chroot).
set -euo pipefail

CACHE="${CHROOT_CACHE:-/var/cache/ironic-conductor-exporter/chroots}"
SUITES=("$@")
((${#SUITES[@]})) || SUITES=(bullseye trixie sid)
PKGS="python3-ironic python3-psycopg2 python3-pymysql"

# mirror (conformance/mirror.sh): the Debian mirror apt uses
. "$(dirname "${BASH_SOURCE[0]}")/mirror.sh"

MIRROR="$(mirror)"
mkdir -p "$CACHE"

build() {
    local suite="$1" dir="$CACHE/$1" stamp="$CACHE/$1/.ironic-conformance-ready"
    local t0 apt_opts=()
    t0=$(date +%s)
    if [[ -f "$stamp" ]]; then
        echo "$suite $dir $(cat "$stamp") 0"
        return
    fi
    rm -rf "$dir"
    # sid's Release file is often past its Valid-Until on mirrors
    [[ "$suite" == sid ]] && apt_opts=(-o Acquire::Check-Valid-Until=false)
    debootstrap --variant=minbase "$suite" "$dir" "$MIRROR" >"$CACHE/$suite.debootstrap.log" 2>&1 || {
        echo "!! debootstrap $suite failed, see $CACHE/$suite.debootstrap.log" >&2
        tail -20 "$CACHE/$suite.debootstrap.log" >&2
        return 1
    }
    # no daemons started by package scripts inside the chroot
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod +x "$dir/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" -qq update \
        >>"$CACHE/$suite.debootstrap.log" 2>&1
    # shellcheck disable=SC2086
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" -y -qq \
        --no-install-recommends install $PKGS >>"$CACHE/$suite.debootstrap.log" 2>&1 || {
        echo "!! apt-get install in $suite failed, see $CACHE/$suite.debootstrap.log" >&2
        tail -20 "$CACHE/$suite.debootstrap.log" >&2
        return 1
    }
    chroot "$dir" apt-get clean
    local v
    v="$(chroot "$dir" dpkg-query -W -f='${Version}' python3-ironic)"
    echo "$v" >"$stamp"
    echo "$suite $dir $v $(( $(date +%s) - t0 ))"
}

T0=$(date +%s)
pids=()
for s in "${SUITES[@]}"; do
    build "$s" &
    pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
echo "chroots ready in $(( $(date +%s) - T0 ))s"
exit "$rc"
