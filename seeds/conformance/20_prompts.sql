-- Prompts the official MCP conformance suite gets (prompts-list, prompts-get-*, completion-complete);
-- readers 'public': the suite sends no credentials.
insert into pgmcp.prompts (name, title, description, arguments, messages, readers)
values
  ('test_simple_prompt', 'Simple prompt', 'A prompt without arguments.', '[]',
   '[{"role": "user", "content": {"type": "text", "text": "This is a simple prompt for testing."}}]',
   array['public']),
  ('test_prompt_with_arguments', 'Prompt with arguments', 'A prompt with two required arguments.',
   '[{"name": "arg1", "description": "First test argument", "required": true},
     {"name": "arg2", "description": "Second test argument", "required": true}]',
   '[{"role": "user", "content": {"type": "text", "text": "Prompt with arguments: arg1=''{{arg1}}'', arg2=''{{arg2}}''"}}]',
   array['public']),
  ('test_prompt_with_embedded_resource', 'Prompt with an embedded resource',
   'A prompt embedding a resource named by its argument.',
   '[{"name": "resourceUri", "description": "URI of the resource to embed", "required": true}]',
   '[{"role": "user", "content": {"type": "resource", "resource": {"uri": "{{resourceUri}}", "mimeType": "text/plain", "text": "Embedded resource content for testing."}}},
     {"role": "user", "content": {"type": "text", "text": "Please process the embedded resource above."}}]',
   array['public']),
  ('test_prompt_with_image', 'Prompt with an image', 'A prompt holding a small PNG image.', '[]',
   '[{"role": "user", "content": {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAIAAACQd1PeAAAADElEQVR4nGP4z8AAAAMBAQDJ/pLvAAAAAElFTkSuQmCC"}},
     {"role": "user", "content": {"type": "text", "text": "Please analyze the image above."}}]',
   array['public'])
on conflict (name) do nothing;
