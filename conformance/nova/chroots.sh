#!/usr/bin/env bash
# Builds (once) the Debian chroots that hold the real Nova releases the Nova
# conformance (issue 32) compares package nova with:
#
#   bookworm  Nova 26.2 (Zed)
#   trixie    Nova 31.0 (2025.1)
#   sid       the newest Nova in Debian
#
# Each chroot is made with `debootstrap --variant=minbase` from the Debian
# mirror the machine is configured with (/etc/apt/sources.list*) and gets
# python3-nova, python3-psycopg2, python3-pymysql and python3-ironicclient
# (Nova 26's IronicDriver imports it). The chroots live
# OUTSIDE the clone, in $NOVA_CHROOT_CACHE (default
# /var/cache/ironic-conductor-exporter/nova-chroots), one directory per
# suite; a chroot is rebuilt only when its stamp file is missing (an
# interrupted build leaves none, and is started again from scratch); a
# ready chroot missing one of the packages (added here later) gets it.
#
# Unlike conformance/chroots.sh the suites are built ONE AT A TIME: the
# machine is shared, and python3-nova's dependencies are many.
#
# Usage: conformance/nova/chroots.sh [SUITE...]   (default: bookworm trixie sid)
# Prints one line per suite: "SUITE DIR NOVA_VERSION BUILD_SECONDS", then
# "nova chroots ready in Ns". Exits non-zero when any build failed.
# Needs root (debootstrap, chroot).
set -euo pipefail

CACHE="${NOVA_CHROOT_CACHE:-/var/cache/ironic-conductor-exporter/nova-chroots}"
SUITES=("$@")
((${#SUITES[@]})) || SUITES=(bookworm trixie sid)
PKGS="python3-nova python3-psycopg2 python3-pymysql python3-ironicclient"

# mirror (conformance/mirror.sh): the Debian mirror apt uses
. "$(dirname "${BASH_SOURCE[0]}")/../mirror.sh"

MIRROR="$(mirror)"
mkdir -p "$CACHE"

build() {
    local suite="$1" dir="$CACHE/$1" stamp="$CACHE/$1/.nova-conformance-ready"
    local log="$CACHE/$1.debootstrap.log" t0 apt_opts=()
    t0=$(date +%s)
    # sid's Release file is often past its Valid-Until on mirrors
    [[ "$suite" == sid ]] && apt_opts=(-o Acquire::Check-Valid-Until=false)
    if [[ -f "$stamp" ]]; then
        local p missing=()
        for p in $PKGS; do
            chroot "$dir" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
        done
        if ((${#missing[@]})); then
            chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" -qq update >>"$log" 2>&1
            chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" -y -qq \
                --no-install-recommends install "${missing[@]}" >>"$log" 2>&1 || {
                echo "!! apt-get install ${missing[*]} in $suite failed, see $log" >&2
                return 1
            }
            chroot "$dir" apt-get clean
        fi
        echo "$suite $dir $(cat "$stamp") $(( $(date +%s) - t0 ))"
        return
    fi
    rm -rf "$dir"
    debootstrap --variant=minbase "$suite" "$dir" "$MIRROR" >"$log" 2>&1 || {
        echo "!! debootstrap $suite failed, see $log" >&2
        tail -20 "$log" >&2
        return 1
    }
    # no daemons started by package scripts inside the chroot
    printf '#!/bin/sh\nexit 101\n' >"$dir/usr/sbin/policy-rc.d"
    chmod +x "$dir/usr/sbin/policy-rc.d"
    cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" -qq update >>"$log" 2>&1
    # shellcheck disable=SC2086
    chroot "$dir" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_opts[@]}" -y -qq \
        --no-install-recommends install $PKGS >>"$log" 2>&1 || {
        echo "!! apt-get install in $suite failed, see $log" >&2
        tail -20 "$log" >&2
        return 1
    }
    chroot "$dir" apt-get clean
    local v
    v="$(chroot "$dir" dpkg-query -W -f='${Version}' python3-nova)"
    echo "$v" >"$stamp"
    echo "$suite $dir $v $(( $(date +%s) - t0 ))"
}

T0=$(date +%s)
rc=0
for s in "${SUITES[@]}"; do
    build "$s" || rc=1
done
echo "nova chroots ready in $(( $(date +%s) - T0 ))s"
exit "$rc"
