#!/usr/bin/env bash
# ironic-schema.sh - build Ironic's real database schema with Ironic's own
# migrations (the equivalent of `ironic-dbsync upgrade`).
#
# Usage: scripts/ironic-schema.sh DB_URL [REVISION]
#
#   DB_URL    a SQLAlchemy URL exactly as in ironic.conf [database]connection:
#               postgresql+psycopg2://postgres@127.0.0.1/ironic
#               mysql+pymysql://root:secret@127.0.0.1/ironic
#               sqlite:////tmp/ironic.sqlite
#             The database must exist (for SQLite the directory must exist);
#             the script only creates the tables.
#   REVISION  optional alembic revision to stop at (default: head), e.g.
#             664f85c2f622 (conductor_group, Ironic Stein).
#
# SQLite schemas are made with `ironic-dbsync create_schema` (Ironic's
# migrations do not run on SQLite); the other backends with `upgrade`.
#
# Environment:
#   PYTHON    interpreter that can import ironic (default $ICE_PYTHON, else python3 from PATH;
#             on Debian: apt-get install python3-ironic, plus python3-psycopg2
#             or python3-pymysql for the backend).
#
# Exit codes: 0 done, 2 usage, 3 ironic not importable, other: dbsync failed.
set -euo pipefail

PYTHON=${PYTHON:-${ICE_PYTHON:-$(command -v python3 || echo python3)}}

if [[ $# -lt 1 || $# -gt 2 || -z ${1:-} ]]; then
	echo "usage: $0 DB_URL [REVISION]" >&2
	exit 2
fi
url=$1
revision=${2:-}

if ! "$PYTHON" -c 'import ironic.cmd.dbsync' >/dev/null 2>&1; then
	echo "ironic-schema: $PYTHON cannot import ironic: install python3-ironic (apt-get install python3-ironic)" >&2
	exit 3
fi

case $url in
postgres://* | postgresql://* | postgresql+psycopg2://*)
	mod=psycopg2 pkg=python3-psycopg2 ;;
mysql://* | mysql+mysqldb://*)
	mod=MySQLdb pkg=python3-mysqldb ;;
mysql+pymysql://*)
	mod=pymysql pkg=python3-pymysql ;;
sqlite://*)
	mod=sqlite3 pkg=python3 ;;
*)
	mod= pkg= ;;
esac
if [[ -n $mod ]] && ! "$PYTHON" -c "import $mod" >/dev/null 2>&1; then
	echo "ironic-schema: $PYTHON cannot import $mod: install $pkg" >&2
	exit 3
fi
# SQLAlchemy 1.4+ no longer accepts the postgres:// alias.
case $url in postgres://*) url=postgresql://${url#postgres://} ;; esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
chmod 700 "$tmp"
# oslo.config substitutes $name in values: escape the dollar signs a
# password may contain.
cat >"$tmp/ironic.conf" <<CONF
[DEFAULT]
use_stderr = true
[database]
connection = ${url//\$/\$\$}
CONF

# Ironic's alembic migrations cannot ALTER constraints on SQLite: there, as
# Ironic documents, the schema is made from the models (create_schema), which
# also stamps the alembic head; a REVISION cannot be honoured.
case $url in
sqlite:*)
	if [[ -n $revision ]]; then
		echo "ironic-schema: REVISION is not supported for SQLite (create_schema builds head)" >&2
		exit 2
	fi
	args=(--config-file "$tmp/ironic.conf" create_schema) ;;
*)
	args=(--config-file "$tmp/ironic.conf" upgrade)
	if [[ -n $revision ]]; then
		args+=(--revision "$revision")
	fi ;;
esac
# ironic.cmd.dbsync has no __main__ guard: call its main() as the
# ironic-dbsync console script does.

# Not exec: the EXIT trap must remove the config file (it may hold a password).
"$PYTHON" -c 'import sys; from ironic.cmd.dbsync import main; sys.argv[0] = "ironic-dbsync"; sys.exit(main())' "${args[@]}"
