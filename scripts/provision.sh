#!/usr/bin/env bash
# Provisions a Debian machine for `make test`: the Debian packages the tests
# run (real Ironic, Keystone, Prometheus, Chromium, podman, ...), podman's
# settings for this kind of machine, PostgreSQL and MariaDB on loopback, and
# the Debian chroots holding the other Ironic releases and the Nova releases. Idempotent: on a
# machine where everything is there it only checks, in a few seconds.
#
# `make test` runs it first (`make provision`), and so does .ci/run through
# `make test`. Needs root for what is missing (apt-get, debootstrap).
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBIAN_FRONTEND=noninteractive
pkgs=(debootstrap systemd python3-oslo.config keystone python3-bcrypt python3-ironic python3-ironicclient python3-psycopg2 python3-tooz python3-pymysql python3-sqlalchemy python3-jinja2 python3-yaml ansible python3-wcmatch prometheus chromium prometheus-alertmanager mariadb-server mariadb-client postgresql nftables podman runc catatonit)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "provision: installing ${missing[*]}"
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# podman builds and runs the image and the rendered pods (deploy/podman_test.go,
# deploy/kubeplay_test.go) as root. Debian's podman 4.3 needs, on this kind of
# machine: runc (crun fails on the hybrid cgroup layout and on setrlimit),
# cgroupfs (no systemd as PID 1), no default ulimits, and the vfs storage
# driver (no overlay mounts inside this machine).
write_if_changed() { # FILE: stdin becomes FILE unless FILE already holds it
  local tmp
  tmp="$(mktemp)"
  cat >"$tmp"
  if cmp -s "$tmp" "$1"; then rm -f "$tmp"; else mv "$tmp" "$1"; chmod 644 "$1"; fi
}
mkdir -p /etc/containers
write_if_changed /etc/containers/containers.conf <<'CONF'
[containers]
default_ulimits = []

[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
CONF
write_if_changed /etc/containers/storage.conf <<'CONF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
podman info --format 'provision: podman runtime {{.Host.OCIRuntime.Name}}, storage {{.Store.GraphDriverName}}'

# PostgreSQL (trust auth on loopback) must be up for the database tests.
if ! pg_isready -q -h 127.0.0.1 -p 5432; then
  pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start
  for _ in $(seq 30); do pg_isready -q -h 127.0.0.1 -p 5432 && break; sleep 1; done
fi

# MariaDB (root without a password on loopback) for the MySQL dialect's tests
# and conformance.
if ! mysqladmin -uroot -h127.0.0.1 --connect-timeout=2 ping >/dev/null 2>&1; then
  mkdir -p /run/mysqld && chown mysql:mysql /run/mysqld 2>/dev/null || true
  start-stop-daemon --start --oknodo --background --exec /usr/sbin/mariadbd -- --user=mysql
  for _ in $(seq 30); do mysqladmin -uroot -h127.0.0.1 --connect-timeout=2 ping >/dev/null 2>&1 && break; sleep 1; done
fi

# make conformance runs Ironic 16.0, 29.0 and the newest from Debian chroots
# (debootstrap from this machine's mirror, cached in
# /var/cache/ironic-conductor-exporter/chroots; about 9 minutes in parallel
# when missing, nothing when they are there), and the Nova conformance
# (conformance/nova) Nova 26.2, 31.0 and 34.0 from chroots of their own
# (nova-chroots beside them, built one at a time). The two sets are built
# side by side: mostly downloads and unpacking.
conformance/chroots.sh &
ironic_chroots=$!
conformance/nova/chroots.sh &
nova_chroots=$!
wait "$ironic_chroots"
wait "$nova_chroots"

go version
go mod download
