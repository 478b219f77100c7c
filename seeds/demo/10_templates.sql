-- The URI templates that describe the demo's stored resources.
insert into pgmcp.resource_templates (uri_template, name, title, description, mime_type, readers)
values
  ('notes:///{tag}/{slug}', 'note', 'Note by tag and slug',
   'A Markdown note from the notes library. Tags group notes by team and topic.', 'text/markdown',
   array['engineering', 'support', 'finance']),
  ('file:///{+path}', 'file', 'File or directory by path',
   'A stored file; a path ending in / is a directory whose read returns its entries.', null,
   array['engineering', 'support', 'finance'])
on conflict (uri_template) do nothing;
