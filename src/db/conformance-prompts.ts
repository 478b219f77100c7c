// The conformance seed's hook (seeds/conformance/30_prompt_change.sql): changes the stored prompts
// for the suite's test_trigger_prompt_change fixture. Other databases do not have the function.
import type { DatabaseHandle } from './pool.js';
import { inWriteTransaction } from './write-transaction.js';

/** Add the conformance seed's changing prompt, or remove it when it is there (one commit). */
export async function changeConformancePrompts(
  db: DatabaseHandle,
): Promise<void> {
  await inWriteTransaction(db, (client) =>
    client.query('select pgmcp.conformance_change_prompts()'),
  );
}
