-- The apps' role behind PgBouncer in transaction pooling (README "PgBouncer and a read replica").
-- A transaction pooler passes no startup parameter to PostgreSQL, so DATABASE_STATEMENT_TIMEOUT_MS
-- cannot travel with each connection as it does on a direct one: the limit is the role's default
-- in the service's database instead, and every app checks at start, through DATABASE_URL, that the
-- limit in force is the one DATABASE_STATEMENT_TIMEOUT_MS says (else it refuses, with one line).
-- Migrations connect with DATABASE_DIRECT_URL and lift the limit for themselves.
--
-- Not under deploy/postgres/: compose runs every file there when it makes the database, and this one
-- wants its variables. By hand: psql -v role=merchant_pay -v db=merchant_pay -v ms=30000 -f deploy/pgbouncer/app-role.sql

ALTER ROLE :"role" IN DATABASE :"db" SET statement_timeout = :'ms';

-- What a new connection of that role now starts with (pg_db_role_setting):
SELECT r.rolname, d.datname, s.setconfig
  FROM pg_db_role_setting s
  JOIN pg_roles r ON r.oid = s.setrole
  JOIN pg_database d ON d.oid = s.setdatabase
 WHERE r.rolname = :'role' AND d.datname = :'db';
