// Spec parity: our zod wire schemas agree with the official 2026-07-28 JSON schema on what is required.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import {
  PROTOCOL_VERSION,
  PaginatedParamsSchema,
  ReadResourceParamsSchema,
} from '../../src/protocol/index.js';
import {
  SPEC_AVAILABLE,
  SPEC_SCHEMA_PATH,
  SPEC_SKIP_REASON,
} from '../setup/spec-schema.js';

if (!SPEC_AVAILABLE) process.stderr.write(`spec-parity: ${SPEC_SKIP_REASON}\n`);

function definitions(): Record<
  string,
  { required?: string[]; properties?: Record<string, unknown> }
> {
  return (
    JSON.parse(readFileSync(SPEC_SCHEMA_PATH, 'utf8')) as {
      $defs: Record<string, { required?: string[] }>;
    }
  ).$defs;
}

function requiredKeys(schema: z.ZodObject): string[] {
  return Object.entries(schema.shape)
    .filter(([, field]) => !(field as z.ZodType).safeParse(undefined).success)
    .map(([key]) => key)
    .sort();
}

describe.skipIf(!SPEC_AVAILABLE)(
  'wire schemas match shared/spec/schema-2026-07-28.json',
  () => {
    it('requires the same request params (besides _meta, which dispatch checks)', () => {
      const defs = definitions();
      const without = (list: string[] | undefined) =>
        (list ?? []).filter((key) => key !== '_meta').sort();
      expect(requiredKeys(ReadResourceParamsSchema)).toEqual(
        without(defs['ReadResourceRequestParams']?.required),
      );
      expect(requiredKeys(PaginatedParamsSchema)).toEqual(
        without(defs['PaginatedRequestParams']?.required),
      );
    });

    it('requires the same _meta keys', () => {
      const defs = definitions();
      expect(defs['RequestMetaObject']?.required?.sort()).toEqual([
        'io.modelcontextprotocol/clientCapabilities',
        'io.modelcontextprotocol/protocolVersion',
      ]);
      expect(SPEC_SCHEMA_PATH).toContain(`schema-${PROTOCOL_VERSION}.json`);
    });
  },
);
