#!/usr/bin/env bash
# make conformance-auth: the sidecar's auth strategies and read policy
# against real Keystone (Debian keystone) and real Ironic 21.4 on one fleet.
# Usage: conformance/auth/run.sh SIDECAR_BINARY   (KEEP=1 keeps logs)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
for cmd in keystone-manage keystone-wsgi-public baremetal psql openssl; do
  command -v "$cmd" >/dev/null || { echo "conformance-auth: $cmd missing (see .ci/run)" >&2; exit 2; }
done
bin="${1:?sidecar binary}"
[[ "$bin" == */* ]] || bin="./$bin"
exec /usr/bin/python3 "$HERE/auth_conformance.py" "$bin"
