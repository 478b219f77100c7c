// prepare(): a statement built with Kysely binds its parameters from named inputs, in the order
// Kysely numbered them, and refuses at load a value that is not an input.
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { builder, prepare } from '../../src/db/connection/prepared.js';

describe('prepare', () => {
  it('binds each numbered parameter from the input of its name, however often and in whatever order the query uses it', () => {
    const query = prepare(
      'test_named_inputs',
      (args: { name: string; limit: number; from: string }) =>
        builder
          .selectFrom('pgmcp.resources')
          .select('uri')
          .where('uri', '>=', args.from)
          .where('name', '=', args.name)
          .where('title', '=', args.name)
          .limit(args.limit),
    );
    expect(query.text).toBe(
      'select "uri" from "pgmcp"."resources" where "uri" >= $1 and "name" = $2 and "title" = $3 limit $4',
    );
    expect(query.values({ limit: 5, name: 'n', from: 'f' })).toEqual([
      'f',
      'n',
      'n',
      5,
    ]);
  });

  it('refuses a value in the query that is not one of its inputs, naming the statement and parameter', () => {
    expect(() =>
      prepare('test_constant', (args: { name: string }) =>
        builder
          .selectFrom('pgmcp.resources')
          .select('uri')
          .where('name', '=', args.name)
          .where('uri', '=', 'notes:///fixed'),
      ),
    ).toThrow(
      'prepared query test_constant: parameter $2 is not one of its inputs',
    );
  });

  it('refuses an input pasted into SQL text instead of bound', () => {
    expect(() =>
      prepare('test_pasted', (args: { prefix: string }) =>
        builder
          .selectFrom('pgmcp.resources')
          .select('uri')
          .where('uri', '>=', sql.raw<string>(`'${args.prefix}'`)),
      ),
    ).toThrow('input prefix is pasted into SQL text, not bound');
  });
});
