-- Sensitive resources (issue 17): reading one needs a person's consent with a reason, asked through
-- the client (an input-required result) and recorded in pgmcp.audit. Listing still shows the
-- resource, never its contents. The catalog and row collections are marked in the config file.
alter table pgmcp.resources add column sensitive boolean not null default false;
comment on column pgmcp.resources.sensitive is 'Reading it needs a person''s consent with a reason, recorded in pgmcp.audit (docs/consent.md).';
