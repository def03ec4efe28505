#!/usr/bin/env bash
# Starts a local PostgreSQL for Mercado, idempotently, and prints its URL.
#
# For CI (.ci/run) and for running the shop or the PostgreSQL tests by
# hand on a Debian-like machine, as root:
#
#   export MERCADO_TEST_DATABASE_URL=$(scripts/postgres-up.sh)
#
# It installs PostgreSQL with apt when it is missing, starts the first
# cluster (creating one if there is none) unless it is already running,
# waits until it accepts connections, and makes sure of a role mercado
# (password mercado, CREATEDB, so that tests can create a database each)
# owning a database mercado. Each step says what it does on stderr; the
# URL is the only thing on stdout. Running it again changes nothing.
set -euo pipefail

say() { printf 'postgres-up: %s\n' "$*" >&2; }

if ! command -v pg_ctlcluster >/dev/null; then
  say "PostgreSQL is not installed: apt-get install postgresql"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update >&2
  apt-get install -y --no-install-recommends postgresql >&2
fi

read -r version cluster port status _ < <(pg_lsclusters --no-header | head -n 1) || true
if [ -z "${version:-}" ]; then
  version=$(ls /usr/lib/postgresql | sort -V | tail -n 1)
  cluster=main
  say "no cluster: pg_createcluster $version $cluster"
  pg_createcluster "$version" "$cluster" >&2
  read -r version cluster port status _ < <(pg_lsclusters --no-header | head -n 1)
fi

if [ "$status" = online ]; then
  say "cluster $version/$cluster is already running on port $port"
else
  say "starting cluster $version/$cluster on port $port"
  out=$(pg_ctlcluster --skip-systemctl-redirect "$version" "$cluster" start 2>&1) || {
    case "$out" in
      *"already running"*) say "it was already running" ;;
      *) printf '%s\n' "$out" >&2; exit 1 ;;
    esac
  }
fi

for i in $(seq 1 60); do
  if pg_isready -q -h 127.0.0.1 -p "$port"; then
    break
  fi
  if [ "$i" = 60 ]; then
    say "PostgreSQL is not accepting connections on 127.0.0.1:$port after 30 s"
    exit 1
  fi
  sleep 0.5
done
say "accepting connections on 127.0.0.1:$port"

psql_admin() { (cd / && su postgres -c "psql -X -q -v ON_ERROR_STOP=1 -p $port $*"); }

say "role mercado (LOGIN CREATEDB, password mercado)"
psql_admin >&2 <<'SQL'
DO $$
BEGIN
  IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'mercado') THEN
    CREATE ROLE mercado;
  END IF;
END
$$;
ALTER ROLE mercado LOGIN CREATEDB PASSWORD 'mercado';
SQL

if [ "$(psql_admin -tA -c "\"SELECT 1 FROM pg_database WHERE datname = 'mercado'\"")" = 1 ]; then
  say "database mercado exists"
else
  say "creating database mercado"
  psql_admin -c "\"CREATE DATABASE mercado OWNER mercado\"" >&2
fi

echo "postgres://mercado:mercado@127.0.0.1:$port/mercado?sslmode=disable"
