#!/usr/bin/env bash
# Starts a throwaway PostgreSQL server on loopback as a non-root user and prints its
# DATABASE_URL on the last line. Installs Debian's PostgreSQL when it is missing.
# Usage: eval "$(scripts/postgres-test-server.sh)"  (sets DATABASE_URL and PG_TEST_DIR)
set -euo pipefail
PORT="${PG_TEST_PORT:-$(node -e "const s=require('net').createServer().listen(0,'127.0.0.1',()=>{console.log(s.address().port);s.close()})")}"

find_bin() {
  local dir
  for dir in /usr/lib/postgresql/*/bin; do
    [ -x "$dir/initdb" ] && { echo "$dir"; return 0; }
  done
  return 1
}

if ! BIN=$(find_bin); then
  echo "installing PostgreSQL from Debian's packages" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq postgresql >&2
  BIN=$(find_bin)
fi

RUN_AS=()
if [ "$(id -u)" = "0" ]; then
  id pgtest >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin pgtest
  RUN_AS=(runuser -u pgtest --)
fi

DIR=$(mktemp -d /tmp/pgtest.XXXXXX)
chmod 755 "$DIR"
[ "${#RUN_AS[@]}" -gt 0 ] && chown pgtest "$DIR"
"${RUN_AS[@]}" "$BIN/initdb" -D "$DIR/data" -U postgres --auth=trust -E UTF8 --no-locale >/dev/null
# The superuser logs in without a password (trust); every other role, namespace logins among
# them, with SCRAM, as a production server would ask.
cat > "$DIR/data/pg_hba.conf" <<'HBA'
local all all trust
host all postgres 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
HBA
"${RUN_AS[@]}" "$BIN/pg_ctl" -D "$DIR/data" -l "$DIR/log" -w -o "-p $PORT -k $DIR -c listen_addresses=127.0.0.1 -c max_connections=300 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start >/dev/null
echo "export PG_TEST_DIR=$DIR"
echo "export DATABASE_URL=postgres://postgres@127.0.0.1:$PORT/postgres"
