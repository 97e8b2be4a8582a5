#!/bin/sh
# The apps' least-privilege PostgreSQL role (issue 37 item 8). The postgres image runs this once,
# when it makes the database (docker-entrypoint-initdb.d, as POSTGRES_USER, which stays the owner
# the migration runs as). Elsewhere run it by hand with the owner's PGHOST/PGUSER/PGPASSWORD:
#   POSTGRES_USER=postgres POSTGRES_DB=merchant_pay APP_DB_USER=merchant_pay_app APP_DB_PASSWORD=... sh 10-app-role.sh
# The role reads and writes rows (SELECT, INSERT, UPDATE, DELETE; the sequences) and changes no
# schema: it creates, alters, drops and truncates nothing. Default privileges give it the tables
# and sequences later migrations create as the owner.
set -eu
: "${POSTGRES_USER:=postgres}" "${POSTGRES_DB:=merchant_pay}" "${APP_DB_USER:=merchant_pay_app}"
: "${APP_DB_PASSWORD:?APP_DB_PASSWORD: the apps role's password}"
psql -v ON_ERROR_STOP=1 -q --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v app="$APP_DB_USER" -v password="$APP_DB_PASSWORD" -v db="$POSTGRES_DB" -v owner="$POSTGRES_USER" <<'SQL'
CREATE ROLE :"app" LOGIN PASSWORD :'password' NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION;
REVOKE ALL ON DATABASE :"db" FROM PUBLIC;
GRANT CONNECT, TEMPORARY ON DATABASE :"db" TO :"app";
REVOKE CREATE ON SCHEMA public FROM PUBLIC;
GRANT USAGE ON SCHEMA public TO :"app";
GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA public TO :"app";
GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA public TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT SELECT, INSERT, UPDATE, DELETE ON TABLES TO :"app";
ALTER DEFAULT PRIVILEGES FOR ROLE :"owner" IN SCHEMA public GRANT USAGE, SELECT ON SEQUENCES TO :"app";
SQL
echo "10-app-role.sh: role $APP_DB_USER may read and write the rows of $POSTGRES_DB"
