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
# One pytest worker per core, at most four (each holds its own PyMC and store fixtures);
# a test file stays on one worker so its module fixtures are built once.
# CUEGAP_TEST_WORKERS=0 runs serially; arguments given after ours (-n 0) win too.
workers=${CUEGAP_TEST_WORKERS:-$(nproc 2>/dev/null || echo 1)}
[ "$workers" -gt 4 ] && workers=4
parallel=()
if [ "$workers" -gt 1 ] && .venv/bin/python -c "import xdist" 2>/dev/null; then
  parallel=(-n "$workers" --dist loadfile)
fi
start=$(date +%s)
# The ten slowest tests are printed at the end of every run (issue 31).
.venv/bin/python -m pytest "${parallel[@]}" --durations=10 "$@"
rc=$?
echo "test suite: $(( $(date +%s) - start )) s (exit $rc)"
exit $rc
