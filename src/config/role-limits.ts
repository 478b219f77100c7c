// The config file's "limits" (issue 32 point 4): per-role overrides of the query/explain call
// limits whose defaults are PGMCP_TOOL_CALLS_PER_TOKEN and PGMCP_TOOL_CALLS_PER_ROLE.
import { z } from 'zod';

const callLimit = (most: number) => z.number().int().min(1).max(most);

/** limits: { roles: { "<role>": { toolCallsPerToken?, toolCallsPerRole? } } } */
export const LimitsFileSchema = z
  .object({
    roles: z
      .record(
        z.string().min(1).max(63, 'PostgreSQL names are at most 63 bytes'),
        z
          .object({
            toolCallsPerToken: callLimit(10_000).optional(),
            toolCallsPerRole: callLimit(100_000).optional(),
          })
          .strict(),
      )
      .optional(),
  })
  .strict();

/** One role's overrides; an absent field keeps the environment's default. */
export interface FileRoleLimits {
  readonly toolCallsPerToken?: number | undefined;
  readonly toolCallsPerRole?: number | undefined;
}

/** The overrides by role name (the login itself, without a role, takes the defaults). */
export function roleLimitsOf(
  limits: z.infer<typeof LimitsFileSchema> | undefined,
): Readonly<Record<string, FileRoleLimits>> {
  return Object.freeze({ ...limits?.roles });
}
