-- Fixtures the official MCP conformance suite reads (@modelcontextprotocol/conformance, 2026-07-28).
-- readers 'public': every role may read the fixtures (the suite sends no credentials).
insert into pgmcp.resources (uri, name, title, description, mime_type, text, readers)
values
  ('test://static-text', 'static-text', 'Static text resource', 'A static text resource for conformance testing.',
   'text/plain', 'This is the content of the static text resource.', array['public']),
  ('test://watched-resource', 'watched-resource', 'Watched resource', 'A resource subscribers watch for updates.',
   'text/plain', 'Watched resource content.', array['public'])
on conflict (uri) do nothing;

insert into pgmcp.resources (uri, name, title, description, mime_type, blob, readers)
values
  ('test://static-binary', 'static-binary', 'Static binary resource', 'A small PNG image.',
   'image/png', decode('iVBORw0KGgoAAAANSUhEUgAAACAAAAAgCAIAAAD8GO2jAAADoklEQVR42uXWb8etWBjH8fPChsMmImKziYiIiMZSWSrLLkslTZKvJEm2eaUzT2YzN7Odfc65h2F6enX5WH9c6/flj3/5+/L/A4Jf+WTgJnAErsAT+IJAEAoiQSwQglTwU8A14ZbgJLgJXoKfECSECVFCnCAS0gSZ8COAlWFnXDNuGU6Gm+Fl+BlBRpgRZcQZIiPNkBlFhsr4DsCUWBJbcpXcJI7ElXgSXxJIQkkkiSVCkkqkpJAoSSV5CzByzBwrx8655txynBw3x8vxc4KcMCfKiXNETpojc4oclVPl6Jw3gBKzxCqxS64ltxKnxC3xSvySoCQsiUriElGSlsiSokSVVCW6/BZwURgKU2EpbPXWjZSKQqEUlUIr2o9dH4Cvdy53jDvmHeuOfX8PuFPcUXeqO/pOe6f/W+NHoOZSY9SYNVaNXf/1n1Pj1ng1fk1QE9ZENfGzKmuKGlVT1eiatqavXwGai8bQmBpLY+snoHE1nsbXBJpQE2niZ1VqCo3SVBqtaTW9fgU0XBqMBrPBarCbJ9DgNngNfkPQEDZEDfGzKhuKBtVQNeiGtqFvXgEdlw6jw+ywOuzuvTPoKDpUR9WhO9qOvvsn4Jeerz2XHqPH7LF67P49oKfoUT1Vj+5pe/qe3569H1cwcBkwBswBa8Aenls04A54A/5AMBAORAPxgBhIB+RAMaAGqgE90A70w6stGrmMGCPmiDVij09gxB3xRvyRYCQciUbiETGSjsiRYkSNVCN6pB3px1fAxGXCmDAnrAl7egIT7oQ34U8EE+FENBFPiIl0Qk4UE2qimtAT7UQ/vQJmLjPGjDljzdjzE5hxZ7wZfyaYCWeimXhGzKQzcqaYUTPVjJ5pZ/r5FQAXMMAEC2yeALjggQ8BhBBBDAJSkFCAggo0tNDD61m0YCyYC9aCvXBduC04C+6Ct+AvBAvhQrQQL4iFdEEuFAtqoVrQC+3Ct6bpirlirdgr15XbirPirngr/kqwEq5EK/GKWElX5EqxolaqFb2+M643zA1rw964btw2nA13w9vwN4KNcCPaiDfERrohN4oNtVFt6I33XrQda8feue7cdpwdd8fb8XeCnXAn2ol3xE66I3eKHbVT7XzPm3xgH1wPbgfOgXvgHfgHwUF4EB3EB+IgPZAHxYE6+KFUcXI7cU7cE+/EPwlOwpPoJD4RJ+mJPPm5XPTAeeA+8B74D4IH4YPoQfxAPEgffHay+/2zk91/Pfz+CU1cQp2ZI9NZAAAAAElFTkSuQmCC', 'base64'), array['public'])
on conflict (uri) do nothing;

insert into pgmcp.resource_templates (uri_template, name, title, description, mime_type, readers)
values
  ('test://template/{id}/data', 'template-data', 'Data by id', 'JSON data for an id (ids 1 to 200 are stored).',
   'application/json', array['public'])
on conflict (uri_template) do nothing;

-- The rows the template describes: stored like every other resource.
insert into pgmcp.resources (uri, name, mime_type, text, readers)
select format('test://template/%s/data', id), format('template-data-%s', id), 'application/json',
       json_build_object('id', id::text, 'templateTest', true, 'data', format('Data for ID: %s', id))::text,
       array['public']
from generate_series(1, 200) as id
on conflict (uri) do nothing;
