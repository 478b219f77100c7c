// jsonMemberValues gives a row_to_json text's values exactly as PostgreSQL's json_each_text does:
// PostgreSQL itself is the expectation, for rows of every kind of value the query tool meets.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  JsonMembersError,
  jsonMemberValues,
} from '../../src/db/ad-hoc/json-members.js';
import { testDatabaseUrl } from '../setup/harness.js';

let sql: pg.Client;

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
});

afterAll(async () => {
  await sql.end();
});

/** Each row of `select` as row_to_json's text and as json_each_text's values. */
async function both(
  select: string,
): Promise<{ json: string; expected: (string | null)[] }[]> {
  const { rows } = await sql.query<{
    json: string;
    expected: (string | null)[] | null;
  }>(
    `select row_to_json(source_row)::text as json,
            array(select value from json_each_text(row_to_json(source_row))) as expected
       from (${select}) source_row`,
  );
  return rows.map((row) => ({ json: row.json, expected: row.expected ?? [] }));
}

describe('jsonMemberValues', () => {
  const cases: [string, string][] = [
    [
      'scalars of every kind',
      `select 1 as i, -2.5e-3::float8 as f, 12345678901234567890::numeric as big, true as t,
              false as b, null::text as z, 'plain' as s, ''::text as empty,
              'NaN'::float8 as nan, '-Infinity'::float8 as inf`,
    ],
    [
      'strings that need escapes',
      `select E'quote " backslash \\\\ slash / tab \\t newline \\n' as s,
              E'\\u00e9t\\u00e9 \\u2603 \\U0001F600' as unicode, E'control \\x01' as ctl,
              '{"not": "json"}'::text as braces, '[1, 2]'::text as brackets, 'a,b}c' as punct`,
    ],
    [
      'repeated and odd column names, in order',
      `select 1 as a, 2 as a, 3 as "a""b", 4 as "x:y", 5 as ":", 6 as "{", 7`,
    ],
    [
      'nested JSON, arrays and composites',
      `select '{"k": [1, {"n": null}], "s": "x}"}'::json as j,
              '{"b": 1,   "a": [true, "]"]}'::jsonb as jb, array[1, null, 3] as ints,
              array['a"b', 'c,d'] as texts, row(1, 'x')::record as rec, '[ ]'::json as spaced,
              '  "str"  '::json as padded, 'null'::json as json_null`,
    ],
    [
      'dates, times, bytes and ranges',
      `select timestamptz '2026-12-05 10:00:00.123+00' as ts, date '2026-12-05' as d,
              interval '1 day 2 hours' as iv, '\\x00ff'::bytea as bytes, int4range(1, 5) as r,
              '10.0.0.1/8'::inet as addr, uuid '00000000-0000-0000-0000-000000000001' as u`,
    ],
    ['no columns', 'select'],
  ];

  it.each(cases)('matches json_each_text: %s', async (_name, select) => {
    const rows = await both(select);
    expect(rows.length).toBe(1);
    for (const { json, expected } of rows)
      expect(jsonMemberValues(json)).toEqual(expected);
  });

  it('matches json_each_text on many generated rows', async () => {
    const rows = await both(
      `select g as id, repeat(chr(32 + g % 95), g % 7) as s, g % 3 = 0 as b,
              case when g % 4 = 0 then null else g * 1.5 end as n,
              json_build_object('g', g, 'tag', chr(34) || g::text) as j
         from generate_series(1, 500) g`,
    );
    expect(rows.length).toBe(500);
    for (const { json, expected } of rows)
      expect(jsonMemberValues(json)).toEqual(expected);
  });

  it('refuses text that is not one JSON object', () => {
    for (const text of ['', '[1]', '{"a":1', '{"a" 1}', '{"a":1} x', '{"a":}'])
      expect(() => jsonMemberValues(text), text).toThrow(JsonMembersError);
  });
});
