#!/usr/bin/env bash
# Start Debian's PostgreSQL cluster (installed by .ci/run) and make a login role for tests.
# Prints the admin URL the test suite uses (CUEGAP_TEST_PG_URL); exits 1 if it cannot.
set -euo pipefail
command -v pg_lsclusters >/dev/null 2>&1 || { echo "postgresql is not installed" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "starting PostgreSQL needs root" >&2; exit 1; }
read -r ver name port status _ < <(pg_lsclusters --no-header | head -n 1) || true
if [ -z "${ver:-}" ]; then
  ver=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  pg_createcluster "$ver" main >&2
  name=main; port=5432; status=down
fi
# Everything but the final URL goes to stderr: callers capture stdout as the URL.
[ "$status" = online ] || pg_ctlcluster "$ver" "$name" start >&2
for _ in $(seq 30); do
  runuser -u postgres -- pg_isready -q -p "$port" && break
  sleep 1
done
runuser -u postgres -- psql -q -p "$port" -v ON_ERROR_STOP=1 -c \
  "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='cuegap') THEN
     CREATE ROLE cuegap LOGIN SUPERUSER PASSWORD 'cuegap'; END IF; END\$\$;" >/dev/null
echo "postgresql://cuegap:cuegap@localhost:${port}/postgres"
