-- Creating the WAL change source's slot and starting its epoch cannot be one transaction
-- (PostgreSQL refuses to create a logical slot in a transaction that has written), so a crash can
-- fall between them, and a slot found on the next start would never start its epoch: listeners
-- would not resync for what committed while there was no slot. The creation is marked before the
-- slot is created and finished after: a slot found while the mark is set is finished then
-- (docs/operations.md "Choosing a change source").
alter table pgmcp.change_capture add column slot_pending boolean not null default false;
comment on column pgmcp.change_capture.slot_pending is 'A slot is being created: set before pg_create_logical_replication_slot, cleared (with a new epoch) once the slot exists.';

create function pgmcp.begin_slot_creation() returns void
language sql
set search_path = pg_catalog, pg_temp
as $$ update pgmcp.change_capture set slot_pending = true $$;
revoke all on function pgmcp.begin_slot_creation() from public;

-- The epoch starts only once the slot exists: a listener that resynced before would have read the
-- tables before changes the slot does not hold.
create function pgmcp.finish_slot_creation() returns bigint
language sql
set search_path = pg_catalog, pg_temp
as $$ update pgmcp.change_capture set epoch = epoch + 1, applied_lsn = '0/0', slot_pending = false
      returning epoch $$;
revoke all on function pgmcp.finish_slot_creation() from public;
