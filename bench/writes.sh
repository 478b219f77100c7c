#!/usr/bin/env bash
# `npm run bench:writes`: what the triggers that keep the list entries (migrations 0008 to 0010)
# cost writers. Single-row statements from one writer in pgbench on the bench database that
# `npm run bench` seeds, with those triggers enabled against disabled (the change-capture triggers
# stay on in both), ROUNDS rounds of RUN_SECONDS s alternated; prints the median throughput of each
# and their ratio. Needs pgbench (PostgreSQL's client tools) and a database URL whose user owns
# pgmcp.resources: BENCH_DATABASE_URL, else TEST_DATABASE_URL with its database replaced by
# BENCH_DATABASE (default pgmcp_bench). It disables triggers while it runs, so on exit it enables
# them, deletes the rows it inserted and rebuilds the entries (pgmcp.rebuild_resource_listings());
# run it against a bench database only, with nothing else writing.
set -euo pipefail

ROUNDS=${ROUNDS:-5}
RUN_SECONDS=${RUN_SECONDS:-5}
url=${BENCH_DATABASE_URL:-}
if [ -z "$url" ]; then
  base=${TEST_DATABASE_URL:?set BENCH_DATABASE_URL or TEST_DATABASE_URL}
  url="${base%/*}/${BENCH_DATABASE:-pgmcp_bench}"
fi
command -v pgbench >/dev/null || {
  echo "pgbench not found: install PostgreSQL's client tools (Debian: postgresql-client)" >&2
  exit 1
}

TRIGGERS=(resources_keep_listing_inserts resources_keep_listing_updates
  resources_keep_listing_deletes resources_keep_listing_truncates
  resources_keep_entries_inserts resources_keep_entries_updates
  resources_keep_entries_deletes resources_keep_entries_truncates)

set_triggers() { # enable | disable
  local sql=""
  for trigger in "${TRIGGERS[@]}"; do
    sql+="alter table pgmcp.resources $1 trigger $trigger;"
  done
  psql -q -X -v ON_ERROR_STOP=1 "$url" -c "$sql"
}
cleanup() {
  set_triggers enable
  echo "rebuilding the list entries the runs without triggers left stale" >&2
  psql -q -X -v ON_ERROR_STOP=1 "$url" \
    -c "delete from pgmcp.resources where uri like 'bench:///writes/%'" \
    -c "select pgmcp.rebuild_resource_listings()" \
    -c "vacuum (analyze) pgmcp.resources, pgmcp.resource_entries, pgmcp.resource_listing" >/dev/null
  rm -rf "$work"
}
work=$(mktemp -d)
trap cleanup EXIT

max_id=$(psql -X -At "$url" -c "select max(id) from pgmcp.resources")
# Each workload: a name and one pgbench transaction. The readers update toggles a role that no
# one is granted, so the bench roles keep the rows they read.
cat >"$work/priority.sql" <<SQL
\set id random(1, $max_id)
update pgmcp.resources set priority = random() where id = :id;
SQL
cat >"$work/text.sql" <<SQL
\set id random(1, $max_id)
update pgmcp.resources set text = md5(random()::text) where id = :id;
SQL
cat >"$work/readers.sql" <<SQL
\set id random(1, $max_id)
update pgmcp.resources
   set readers = case when 'bench_writes' = any (readers) then array_remove(readers, 'bench_writes')
                      else readers || 'bench_writes'::text end
 where id = :id;
SQL
cat >"$work/insert.sql" <<SQL
insert into pgmcp.resources (uri, name, text, readers)
values ('bench:///writes/' || gen_random_uuid(), 'write', 'x', '{public}');
SQL

tps() { pgbench -n -T "$RUN_SECONDS" -f "$1" "$url" 2>/dev/null | awk '/^tps/ { print $3 }'; }
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

printf '| single-row statement | without (per s) | with (per s) | ratio |\n|---|---|---|---|\n'
for workload in priority text readers insert; do
  : >"$work/off" && : >"$work/on" && : >"$work/ratio"
  for _ in $(seq "$ROUNDS"); do
    set_triggers disable
    off=$(tps "$work/$workload.sql")
    set_triggers enable
    on=$(tps "$work/$workload.sql")
    echo "$off" >>"$work/off"
    echo "$on" >>"$work/on"
    awk -v a="$on" -v b="$off" 'BEGIN { print a / b }' >>"$work/ratio"
  done
  printf '| %s | %.0f | %.0f | %.2f |\n' "$workload" "$(median <"$work/off")" \
    "$(median <"$work/on")" "$(median <"$work/ratio")"
done
