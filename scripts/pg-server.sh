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
# Server settings for bulk ingest into a growing store (issue 31; docs/configuration.md):
# larger shared buffers and fewer, spread checkpoints keep the index pages of a store of
# tens of GiB in memory and stop full-page writes after every checkpoint from dominating.
# shared_buffers is a quarter of the memory, at most 4 GiB; it applies when the server
# (re)starts, the rest on reload.
conf=/etc/postgresql/$ver/$name/conf.d/cuegap.conf
mem_mb=$(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo 2>/dev/null || echo 4096)
buffers_mb=$(( mem_mb / 4 > 4096 ? 4096 : mem_mb / 4 ))
if [ -d "$(dirname "$conf")" ]; then
  cat > "$conf" <<EOF
# written by cuegap's scripts/pg-server.sh
shared_buffers = ${buffers_mb}MB
effective_cache_size = $(( mem_mb / 2 ))MB
maintenance_work_mem = 512MB
work_mem = 32MB
max_wal_size = 8GB
min_wal_size = 1GB
checkpoint_timeout = 15min
checkpoint_completion_target = 0.9
wal_compression = on
wal_buffers = 64MB
EOF
fi
# Everything but the final URL goes to stderr: callers capture stdout as the URL.
if [ "$status" = online ]; then
  runuser -u postgres -- psql -q -p "$port" -c "SELECT pg_reload_conf()" >/dev/null 2>&1 || true
else
  pg_ctlcluster "$ver" "$name" start >&2
fi
for _ in $(seq 30); do
  runuser -u postgres -- pg_isready -q -p "$port" && break
  sleep 1
done
runuser -u postgres -- psql -q -p "$port" -v ON_ERROR_STOP=1 -c \
  "DO \$\$BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname='cuegap') THEN
     CREATE ROLE cuegap LOGIN SUPERUSER PASSWORD 'cuegap'; END IF; END\$\$;" >/dev/null
echo "postgresql://cuegap:cuegap@localhost:${port}/postgres"
