#!/bin/sh
# The entry point of the local PostgreSQL stand-in (see the Dockerfile
# beside it): the official image's contract, reduced to what Mercado uses.
#
# On the first start, when $PGDATA holds no cluster yet, it runs initdb
# with POSTGRES_USER as the superuser (password POSTGRES_PASSWORD, needed
# for connections over TCP) and creates POSTGRES_DB. Then it runs the
# server in the foreground, listening on every address. Started as root,
# it fixes the ownership of $PGDATA and drops to the postgres user;
# started as postgres (Kubernetes: runAsUser 999), it just runs.
set -eu

if [ "${1#-}" != "$1" ]; then
	set -- postgres "$@"
fi

if [ "$1" != postgres ]; then
	exec "$@"
fi

: "${PGDATA:=/var/lib/postgresql/data}"
: "${POSTGRES_USER:=postgres}"
: "${POSTGRES_DB:=$POSTGRES_USER}"
export PGDATA

if [ "$(id -u)" = 0 ]; then
	mkdir -p "$PGDATA"
	chown postgres:postgres "$PGDATA"
	chmod 700 "$PGDATA"
	exec setpriv --reuid=postgres --regid=postgres --init-groups "$0" "$@"
fi

if [ ! -s "$PGDATA/PG_VERSION" ]; then
	if [ -z "${POSTGRES_PASSWORD:-}" ]; then
		echo "docker-entrypoint: the database is not initialised and POSTGRES_PASSWORD is not set" >&2
		exit 1
	fi
	pwfile=$(mktemp)
	printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
	initdb --username="$POSTGRES_USER" --pwfile="$pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 \
		--encoding=UTF8 --locale=C.UTF-8
	rm -f "$pwfile"
	# initdb only lets in loopback over TCP; the services connect from
	# other containers, with a password.
	echo "host all all all scram-sha-256" >>"$PGDATA/pg_hba.conf"
	echo "listen_addresses = '*'" >>"$PGDATA/postgresql.conf"
	if [ "$POSTGRES_DB" != postgres ]; then
		# Single-user mode: no server, no socket, nothing to wait for.
		db=$(printf '%s' "$POSTGRES_DB" | sed 's/"/""/g')
		echo "CREATE DATABASE \"$db\";" | postgres --single -j -D "$PGDATA" postgres >/dev/null
	fi
	echo "docker-entrypoint: initialised $PGDATA (role $POSTGRES_USER, database $POSTGRES_DB)"
fi

exec "$@"
