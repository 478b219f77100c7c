#!/bin/sh
# Run once by the postgres image when its data volume is created: the login pgmcp serves as, with the
# password from PGMCP_AUTHENTICATOR_PASSWORD. NOINHERIT, not a superuser, owns nothing; `pgmcp
# migrate` grants it what it needs, and `pgmcp role grant <role>` the roles requests may use.
set -eu
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --dbname "$POSTGRES_DB" \
  -v password="$PGMCP_AUTHENTICATOR_PASSWORD" <<'SQL'
CREATE ROLE pgmcp_authenticator LOGIN NOINHERIT PASSWORD :'password';
SQL
