#!/usr/bin/env bash
# The test command (`make test`): the whole suite on SQLite, and on PostgreSQL when a server
# is given in CUEGAP_TEST_PG_URL or can be started here (Debian's postgresql, as root).
set -uo pipefail
cd "$(dirname "$0")/.."
if [ -z "${CUEGAP_TEST_PG_URL:-}" ]; then
  if url=$(bash scripts/pg-server.sh 2>/dev/null | tail -n 1) && [ -n "$url" ]; then
    export CUEGAP_TEST_PG_URL="$url"
  else
    echo "note: no PostgreSQL server available; PostgreSQL tests will be skipped" >&2
  fi
fi
[ -n "${CUEGAP_TEST_PG_URL:-}" ] && echo "PostgreSQL tests against ${CUEGAP_TEST_PG_URL%%@*}@..."
start=$(date +%s)
.venv/bin/python -m pytest "$@"
rc=$?
echo "test suite: $(( $(date +%s) - start )) s (exit $rc)"
exit $rc
