#!/usr/bin/env bash
# Stops the server postgres-test-server.sh started (PG_TEST_DIR) and removes its files.
set -euo pipefail
[ -n "${PG_TEST_DIR:-}" ] || exit 0
BIN=$(ls -d /usr/lib/postgresql/*/bin | head -n 1)
if [ "$(id -u)" = "0" ]; then runuser -u pgtest -- "$BIN/pg_ctl" -D "$PG_TEST_DIR/data" -m fast stop >/dev/null || true
else "$BIN/pg_ctl" -D "$PG_TEST_DIR/data" -m fast stop >/dev/null || true; fi
rm -rf "$PG_TEST_DIR"
