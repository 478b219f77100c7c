// Public surface of prompts/: prompts stored in pgmcp.prompts (prompts/list, prompts/get), the
// completion of their arguments, and what a logged prompt change means to listen streams.
import type { ChangeRow } from '../db/index.js';

export { PROMPTS_COLLECTION, renderPrompt } from './prompt-list.js';
export { createGetPromptMethod } from './prompt-get.js';
export { completePromptArgument } from './prompt-completion.js';
export { LIST_PROMPTS_PAGE } from './statements/prompt-statements.js';
export {
  DEFAULT_PROMPT_LIMITS,
  type PromptDependencies,
  type PromptLimits,
} from './prompt-dependencies.js';

/** The change log's `relation` for a stored prompt's change (migrations/0015). */
export const PROMPTS_RELATION = 'pgmcp.prompts';

/**
 * What a logged prompt change means to listen streams: no URI to hear of, only prompts/list may
 * have changed, for the roles that could read the row before or after (the change's readers).
 */
export function promptChange(change: ChangeRow): {
  readonly seq: string;
  readonly uri: null;
  readonly kind: ChangeRow['kind'];
  readonly listed: false;
  readonly prompt: true;
} {
  return {
    seq: change.seq,
    uri: null,
    kind: change.kind,
    listed: false,
    prompt: true,
  };
}
