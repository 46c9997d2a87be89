#!/usr/bin/env bash
# Starts the PostgreSQL and Redis the backend tests use, if they are not answering already, and waits until both
# answer. Idempotent: running it again with both up does nothing. The tests FAIL (never skip) without them.
#
# With ATTESTD_TEST_PG_URL / ATTESTD_TEST_REDIS_URL set, those servers are someone else's to run: this script only
# waits for them. Otherwise it manages the local ones (127.0.0.1:5432 database "test", 127.0.0.1:6379).
set -euo pipefail

PG_URL="${ATTESTD_TEST_PG_URL:-postgres://postgres@127.0.0.1:5432/test}"
REDIS_URL="${ATTESTD_TEST_REDIS_URL:-redis://127.0.0.1:6379}"
WAIT_SECONDS="${SERVICES_WAIT_SECONDS:-60}"

pg_up() { pg_isready -q -d "$PG_URL" >/dev/null 2>&1; }
redis_up() { [ "$(redis-cli -u "$REDIS_URL" ping 2>/dev/null)" = "PONG" ]; }

wait_for() { # name, check function
  local name=$1 check=$2 i
  for ((i = 0; i < WAIT_SECONDS * 4; i++)); do
    if "$check"; then echo "services: $name is up"; return 0; fi
    sleep 0.25
  done
  echo "services: $name did not come up within ${WAIT_SECONDS}s" >&2
  return 1
}

if ! pg_up && [ -z "${ATTESTD_TEST_PG_URL:-}" ]; then
  version=$(ls /etc/postgresql | sort -V | tail -n 1)
  echo "services: starting PostgreSQL $version"
  pg_ctlcluster --skip-systemctl-redirect "$version" main start || true # "already running" while starting up is fine
fi

if ! redis_up && [ -z "${ATTESTD_TEST_REDIS_URL:-}" ]; then
  echo "services: starting Redis"
  mkdir -p /var/lib/redis /var/log/redis
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port 6379 --save "" --appendonly no \
    --dir /var/lib/redis --logfile /var/log/redis/ci.log
fi

wait_for PostgreSQL pg_up
wait_for Redis redis_up

# the tests create and drop their own databases next to this one: it must exist
if ! psql "$PG_URL" -Atqc "SELECT 1" >/dev/null 2>&1; then
  base="${PG_URL%/*}/postgres"
  db="${PG_URL##*/}"; db="${db%%\?*}"
  echo "services: creating database $db"
  psql "$base" -qc "CREATE DATABASE \"$db\""
fi
