// prompts/list (spec §8.1): what one listed prompt shows. The list itself is a keyset list method
// over pgmcp.prompts (resources/ createKeysetListMethod, wired by app/), as the role reads it.
import type { PromptListingRow } from './statements/prompt-statements.js';
import type { StoredArgument } from './prompt-dependencies.js';

/** The collection prompts/list cursors are bound to. */
export const PROMPTS_COLLECTION = 'prompts';

/** A Prompt as the spec shows it: only its fields (`complete` is pgmcp's own). */
export function renderPrompt(row: PromptListingRow): string {
  const prompt: Record<string, unknown> = { name: row.name };
  if (row.title !== null) prompt['title'] = row.title;
  if (row.description !== null) prompt['description'] = row.description;
  const stored = JSON.parse(row.arguments) as StoredArgument[];
  if (stored.length > 0)
    prompt['arguments'] = stored.map((argument) => {
      const shown: Record<string, unknown> = { name: argument.name };
      if (argument.title !== undefined) shown['title'] = argument.title;
      if (argument.description !== undefined)
        shown['description'] = argument.description;
      if (argument.required !== undefined)
        shown['required'] = argument.required;
      return shown;
    });
  return JSON.stringify(prompt);
}
