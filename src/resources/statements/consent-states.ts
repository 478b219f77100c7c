// Consent requestStates already answered (migration 0031): each is used once, across replicas.
import { writeOneStatement, type DatabaseHandle } from '../../db/index.js';

/**
 * Record that the requestState with this digest was answered; true the first time, false when it
 * was answered before (a replay). The record is kept until `expiresAt` (when the state itself can
 * no longer be used), and expired records are pruned by the same call.
 */
export async function useConsentState(
  db: DatabaseHandle,
  digest: Buffer,
  expiresAt: Date,
): Promise<boolean> {
  const rows = await writeOneStatement<{ first: boolean }>(db, {
    name: 'pgmcp_use_consent_state',
    text: 'select pgmcp.use_consent_state($1, $2) as first',
    values: [digest, expiresAt],
  });
  return rows[0]?.first === true;
}
