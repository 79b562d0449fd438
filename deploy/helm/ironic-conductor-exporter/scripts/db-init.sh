#!/bin/bash
# Creates one read-only database user of ironic-conductor-exporter with the
# grants of one script of deploy/sql/ (files/sql/ in the chart), the way
# openstack-helm's db-init jobs do (helm-toolkit
# templates/manifests/_job-db-init-mysql.tpl at 0d5b16ca,
# templates/scripts/_db-init.py.tpl at 1775e1be, _db-pg-init.sh.tpl at
# 14713b54): the
# administrator's connection from ROOT_DB_CONNECTION, the user's name,
# password and database from the user's own DB_CONNECTION (SQLAlchemy
# URLs, both), run again at each upgrade: an existing user gets its password
# set again (ALTER instead of CREATE) and the grants, which are additive.
#
#   GRANTS           the script (mysql or postgresql flavour of deploy/sql/)
#   GRANTS_USER      the user name the script is written for
#   GRANTS_DATABASE  the database the script grants on, replaced by
#                    DB_CONNECTION's database
#   GRANTS_CELL_DATABASE, CELL_DATABASES  Nova's: the cell database the
#                    script grants on, and the cell databases to grant on
#                    instead (space-separated)
#   CLIENT_ARGS      more arguments of the mariadb/mysql or psql client
set -euo pipefail
shopt -u patsub_replacement 2>/dev/null || true

fail() { echo "db-init: $*" >&2; exit 1; }
for v in ROOT_DB_CONNECTION DB_CONNECTION GRANTS GRANTS_USER GRANTS_DATABASE; do
  [[ -n "${!v:-}" ]] || fail "environment variable $v not set"
done

# unquote: %XX escapes decoded, as SQLAlchemy's make_url does.
unquote() { local s=${1//\\/\\\\}; printf '%b' "${s//%/\\x}"; }

# parse_url URL PREFIX: PREFIX_scheme, _user, _password, _host, _port,
# _database, as SQLAlchemy's URL pattern splits them (the password runs to
# the first "@"; the query is dropped).
parse_url() {
  local url=$1 p=$2 rest auth="" hostport db="" user pass=""
  [[ "$url" == *://* ]] || fail "$p: not a URL (scheme://user:password@host:port/database)"
  printf -v "${p}_scheme" '%s' "${url%%://*}"
  rest=${url#*://}
  if [[ "$rest" == *@* ]]; then auth=${rest%%@*}; rest=${rest#*@}; fi
  rest=${rest%%\?*}
  hostport=${rest%%/*}
  [[ "$rest" == */* ]] && db=${rest#*/}
  user=${auth%%:*}
  [[ "$auth" == *:* ]] && pass=${auth#*:}
  printf -v "${p}_user" '%s' "$(unquote "$user")"
  printf -v "${p}_password" '%s' "$(unquote "$pass")"
  printf -v "${p}_host" '%s' "${hostport%%:*}"
  if [[ "$hostport" == *:* ]]; then printf -v "${p}_port" '%s' "${hostport#*:}"; else printf -v "${p}_port" '%s' ""; fi
  printf -v "${p}_database" '%s' "$(unquote "$db")"
}

parse_url "$ROOT_DB_CONNECTION" root
parse_url "$DB_CONNECTION" user
ident='^[A-Za-z_][A-Za-z0-9_]*$'
[[ "$user_user" =~ $ident ]] || fail "the user of DB_CONNECTION, \"$user_user\", is not a plain SQL name"
[[ "$user_database" =~ $ident ]] || fail "the database of DB_CONNECTION, \"$user_database\", is not a plain SQL name"
[[ -n "$user_password" ]] || fail "DB_CONNECTION has no password"
for c in ${CELL_DATABASES:-}; do [[ "$c" =~ $ident ]] || fail "cell database \"$c\" is not a plain SQL name"; done

case "$root_scheme" in
  mysql*|mariadb*) backend=mysql ;;
  postgres*) backend=postgresql ;;
  *) fail "ROOT_DB_CONNECTION: scheme $root_scheme is neither MySQL nor PostgreSQL" ;;
esac
case "$user_scheme" in
  mysql*|mariadb*) [[ $backend == mysql ]] ;;
  postgres*) [[ $backend == postgresql ]] ;;
esac || fail "ROOT_DB_CONNECTION ($root_scheme) and DB_CONNECTION ($user_scheme) name other backends"
[[ "$GRANTS" == *".$backend.sql" ]] || fail "$GRANTS is not the $backend script (dbInit.backend)"

# rename OLD NEW: the script's database OLD named NEW, in the places
# deploy/sql/'s scripts name databases.
rename() {
  sed -e "s/ ON \`$1\`\./ ON \`$2\`./; s/ ON $1\./ ON $2./" \
      -e "s/^\\\\connect $1\$/\\\\connect $2/; s/ ON DATABASE $1 TO / ON DATABASE $2 TO /"
}

# The script with the user's name, password and databases.
sql=$(cat "$GRANTS")
if [[ -n "${GRANTS_CELL_DATABASE:-}" ]]; then
  # Nova's: the lines of the cell database repeated for each of
  # CELL_DATABASES (psql: from its \connect to the end).
  head_part="" cell_part="" in_cell=""
  while IFS= read -r line; do
    if [[ "$line" == "\\connect $GRANTS_CELL_DATABASE" ]]; then in_cell=1; fi
    if [[ -n "$in_cell" || "$line" == *" ON \`$GRANTS_CELL_DATABASE\`."* ]]; then
      cell_part+="$line"$'\n'
    else
      head_part+="$line"$'\n'
    fi
  done <<<"$sql"
  [[ -n "$cell_part" ]] || fail "$GRANTS grants nothing on $GRANTS_CELL_DATABASE"
  sql=$head_part
  for c in ${CELL_DATABASES:-$GRANTS_CELL_DATABASE}; do
    sql+=$(rename "$GRANTS_CELL_DATABASE" "$c" <<<"$cell_part")$'\n'
  done
fi
sql=$(rename "$GRANTS_DATABASE" "$user_database" <<<"$sql")
sql=${sql//"$GRANTS_USER"/$user_user}
pw=${user_password//\'/\'\'}
[[ $backend == mysql ]] && pw=${user_password//\\/\\\\} && pw=${pw//\'/\'\'}
sql=${sql//\'CHANGE-ME\'/\'$pw\'}

read -r -a extra <<<"${CLIENT_ARGS:-}"
admin() {
  if [[ $backend == mysql ]]; then
    local client; client=$(command -v mariadb || command -v mysql) || fail "no mariadb or mysql client in the image"
    MYSQL_PWD=$root_password "$client" --protocol=TCP -h "$root_host" -P "${root_port:-3306}" -u "$root_user" \
      --batch --skip-column-names "${extra[@]}" "$@"
  else
    PGPASSWORD=$root_password psql -h "$root_host" -p "${root_port:-5432}" -U "$root_user" -d "${root_database:-postgres}" \
      -v ON_ERROR_STOP=1 -X -q -A -t "${extra[@]}" "$@"
  fi
}

# An existing user: its password set again, its grants added.
if [[ $backend == mysql ]]; then
  exists=$(admin -e "SELECT COUNT(*) FROM mysql.user WHERE User = '$user_user' AND Host = '%'")
  [[ "$exists" == 0 ]] || sql=${sql/CREATE USER /ALTER USER }
else
  exists=$(admin -c "SELECT COUNT(*) FROM pg_roles WHERE rolname = '$user_user'")
  [[ "$exists" == 0 ]] || sql=${sql/CREATE ROLE /ALTER ROLE }
fi
admin <<<"$sql"
echo "db-init: $user_user on $user_database${CELL_DATABASES:+ and ${CELL_DATABASES}} with the grants of $(basename "$GRANTS") ($([[ $exists == 0 ]] && echo created || echo updated))"

# The user's own connection works (as openstack-helm's db_init tests it).
if [[ $backend == mysql ]]; then
  MYSQL_PWD=$user_password "$(command -v mariadb || command -v mysql)" --protocol=TCP -h "$user_host" -P "${user_port:-3306}" \
    -u "$user_user" --batch "${extra[@]}" -e "SELECT 1" "$user_database" >/dev/null
else
  PGPASSWORD=$user_password psql -h "$user_host" -p "${user_port:-5432}" -U "$user_user" -d "$user_database" \
    -v ON_ERROR_STOP=1 -X -q "${extra[@]}" -c "SELECT 1" >/dev/null
fi
echo "db-init: $user_user connects to $user_database"
