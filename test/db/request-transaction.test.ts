// The request transaction: identity set transaction-locally, read-only, one pipelined round trip.
import net from 'node:net';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createDatabase,
  runRequestQuery,
  type DatabaseHandle,
  type PreparedQuery,
} from '../../src/db/index.js';
import { DESCRIBE_RELATION } from '../../src/resources/statements/catalog-statements.js';
import { LIST_RESOURCES_PAGE } from '../../src/resources/statements/resource-statements.js';
import { TEMPLATE_COMPLETION_CANDIDATES } from '../../src/resources/statements/completion-statements.js';
import { ProtocolError } from '../../src/errors.js';
import { testDatabaseUrl } from '../setup/harness.js';

const READER = 'pgmcp_test_tenant_reader';
const OUTSIDER = 'pgmcp_test_outsider';
let sql: pg.Client;
let db: DatabaseHandle;
const signal = new AbortController().signal;

function statement<TRow>(
  name: string,
  text: string,
): PreparedQuery<Record<string, never>, TRow> {
  return { name, text, values: () => [] };
}

const ITEMS = statement<{
  id: number;
  tenant: string;
  who: string;
  tenant_claim: string | null;
}>(
  'test_items',
  `select id, tenant, current_user as who, current_setting('request.jwt.claims', true)::json->>'tenant' as tenant_claim
     from rt_test.items order by id`,
);
const WHO = statement<{
  who: string;
  claims: string | null;
  read_only: string;
}>(
  'test_who',
  `select current_user as who, current_setting('request.jwt.claims', true) as claims, current_setting('transaction_read_only') as read_only`,
);

beforeAll(async () => {
  sql = new pg.Client({ connectionString: testDatabaseUrl() });
  await sql.connect();
  await sql.query(`
    drop schema if exists rt_test cascade;
    do $$ begin
      if not exists (select from pg_roles where rolname = '${READER}') then create role ${READER} nologin; end if;
      if not exists (select from pg_roles where rolname = '${OUTSIDER}') then create role ${OUTSIDER} nologin; end if;
    end $$;
    create schema rt_test;
    create table rt_test.items (id int primary key, tenant text not null);
    insert into rt_test.items values (1, 'a'), (2, 'b'), (3, 'a');
    alter table rt_test.items enable row level security;
    create policy by_tenant on rt_test.items using (tenant = current_setting('request.jwt.claims', true)::json->>'tenant');
    grant usage on schema rt_test to ${READER}, ${OUTSIDER};
    grant select on rt_test.items to ${READER};
  `);
  db = createDatabase({
    connectionString: testDatabaseUrl(),
    poolSize: 1,
    statementTimeoutMs: 5000,
    onError: () => undefined,
  });
});

afterAll(async () => {
  await db.close();
  await sql.query(
    `drop schema if exists rt_test cascade; drop owned by ${READER}, ${OUTSIDER}; drop role if exists ${READER}; drop role if exists ${OUTSIDER};`,
  );
  await sql.end();
});

describe('runRequestQuery', () => {
  it('runs as the principal role with its claims visible to row-level security', async () => {
    const rows = await runRequestQuery(
      {
        db,
        principal: { role: READER, claims: { tenant: 'a' } },
        cancellation: signal,
      },
      ITEMS,
      {},
    );
    expect(rows).toEqual([
      { id: 1, tenant: 'a', who: READER, tenant_claim: 'a' },
      { id: 3, tenant: 'a', who: READER, tenant_claim: 'a' },
    ]);
    const other = await runRequestQuery(
      {
        db,
        principal: { role: READER, claims: { tenant: 'b' } },
        cancellation: signal,
      },
      ITEMS,
      {},
    );
    expect(other.map((row) => row.id)).toEqual([2]);
  });

  it('binds arrays as Postgres arrays in the one-round-trip path, whatever their elements hold', async () => {
    const values = [
      'plain',
      'with "quotes"',
      'back\\slash',
      'comma, {brace}',
      'NULL',
      '',
      null,
    ];
    const ECHO: PreparedQuery<
      { values: (string | null)[] },
      { value: string | null; n: number }
    > = {
      name: 'test_echo_array',
      text: 'select v as value, n::int from unnest($1::text[]) with ordinality as t(v, n) order by n',
      values: (args) => [args.values],
    };
    for (const principal of [
      { role: READER, claims: {} },
      { role: null, claims: {} },
    ]) {
      const rows = await runRequestQuery(
        { db, principal, cancellation: signal },
        ECHO,
        {
          values,
        },
      );
      expect(rows.map((row) => row.value)).toEqual(values);
    }
  });

  it('sets identity transaction-locally: the pooled connection is the login role again afterwards', async () => {
    await runRequestQuery(
      {
        db,
        principal: { role: READER, claims: { tenant: 'a' } },
        cancellation: signal,
      },
      ITEMS,
      {},
    );
    const [after] = await runRequestQuery(
      { db, principal: { role: null, claims: {} }, cancellation: signal },
      WHO,
      {},
    );
    const { rows } = await sql.query<{ who: string }>(
      'select current_user as who',
    );
    expect(after?.who).toBe(rows[0]?.who);
    expect(after?.claims ?? '').toBe('');
  });

  it('is read-only with and without a role', async () => {
    const [withRole] = await runRequestQuery(
      { db, principal: { role: READER, claims: {} }, cancellation: signal },
      WHO,
      {},
    );
    const [withoutRole] = await runRequestQuery(
      { db, principal: { role: null, claims: {} }, cancellation: signal },
      WHO,
      {},
    );
    expect(withRole?.read_only).toBe('on');
    expect(withoutRole?.read_only).toBe('on');
    const write = statement(
      'test_write',
      `insert into rt_test.items values (9, 'z') returning id`,
    );
    await expect(
      runRequestQuery(
        { db, principal: { role: null, claims: {} }, cancellation: signal },
        write,
        {},
      ),
    ).rejects.toBeInstanceOf(ProtocolError);
  });

  it('plans each request statement once, generic, with no JIT and no parallel workers', async () => {
    // Left to choose, PostgreSQL planned the list again on every execution (its LIMIT is a
    // parameter); the generic plan's estimate crossed jit_above_cost and, as a request role,
    // made a parallel plan (db/pool.ts).
    const anyone = { role: null, claims: {} };
    for (let run = 0; run < 8; run += 1)
      await runRequestQuery(
        { db, principal: anyone, cancellation: signal },
        LIST_RESOURCES_PAGE,
        {
          afterId: String(run * 3),
          limit: 2 + run,
        },
      );
    // On the connection the list ran on: the first pipelined one (one request at a time).
    const [plans] = await runRequestQuery(
      { db, principal: anyone, cancellation: signal },
      {
        ...statement<{
          generic: number;
          custom: number;
          jit: string;
          workers: string;
        }>(
          'test_plans',
          `select generic_plans::int as generic, custom_plans::int as custom,
                  current_setting('jit') as jit,
                  current_setting('max_parallel_workers_per_gather') as workers
             from pg_prepared_statements where name = 'pgmcp_list_resources_page'`,
        ),
        pipelined: true,
      },
      {},
    );
    expect(plans).toEqual({ generic: 8, custom: 0, jit: 'off', workers: '0' });
  });

  it('bounds the index scans of generic plans: completion and a description read only their own rows', async () => {
    // Generic plans cannot drop "$3 is null or …" for a given $3: completion scanned the URI
    // index to its end, and a description scanned every relation (resources/statements/completion-statements.ts, resources/statements/catalog-statements.ts).
    const anyone = { role: null, claims: {} };
    const completion = {
      template: 'notes:///{tag}/{slug}',
      from: 'a',
      to: 'b',
      limit: 100,
    };
    const description = {
      database: (
        await sql.query<{ name: string }>('select current_database() as name')
      ).rows[0]?.name as string,
      schema: 'rt_test',
      relation: 'items',
    };
    const [candidates] = await runRequestQuery(
      { db, principal: anyone, cancellation: signal },
      TEMPLATE_COMPLETION_CANDIDATES,
      completion,
    );
    expect(candidates?.uris).toEqual([]);
    const [described] = await runRequestQuery(
      { db, principal: anyone, cancellation: signal },
      DESCRIBE_RELATION,
      description,
    );
    expect(JSON.parse(described?.description ?? '{}')).toMatchObject({
      name: 'items',
    });
    // The same prepared statements, explained on the same pooled session. What is asserted is how
    // many rows each scan takes from its table, against counts taken from the data: a scan
    // bounded by the parameters takes only the rows they select; one that is not (a sequential
    // scan, or an index scan with the bound left to a filter) takes every row past the bound too.
    interface PlanNode {
      'Relation Name'?: string;
      Alias?: string;
      'Actual Rows'?: number;
      'Actual Loops'?: number;
      'Rows Removed by Filter'?: number;
      'Rows Removed by Index Recheck'?: number;
      Plans?: PlanNode[];
    }
    const nodes = (node: PlanNode): PlanNode[] => [
      node,
      ...(node.Plans ?? []).flatMap(nodes),
    ];
    // Both removal counts are averages per loop, like the rows returned.
    const rowsRead = (node: PlanNode | undefined): number =>
      ((node?.['Actual Rows'] ?? 0) +
        (node?.['Rows Removed by Filter'] ?? 0) +
        (node?.['Rows Removed by Index Recheck'] ?? 0)) *
      (node?.['Actual Loops'] ?? 1);
    const client = await db.pool.connect();
    try {
      const explain = async (
        statement: string,
        values: unknown[],
      ): Promise<PlanNode[]> => {
        const { rows } = await client.query<{
          'QUERY PLAN': { Plan: PlanNode }[];
        }>(
          `explain (analyze, format json) execute ${statement}(${values
            .map((value) => `'${String(value)}'`)
            .join(', ')})`,
        );
        return nodes(rows[0]?.['QUERY PLAN'][0]?.Plan ?? {});
      };
      const uriScans = (
        await explain(
          TEMPLATE_COMPLETION_CANDIDATES.name,
          TEMPLATE_COMPLETION_CANDIDATES.values(completion),
        )
      ).filter((node) => node['Relation Name'] === 'resources');
      const relationScans = (
        await explain(
          DESCRIBE_RELATION.name,
          DESCRIBE_RELATION.values(description),
        )
      ).filter(
        (node) => node['Relation Name'] === 'pg_class' && node.Alias === 'c',
      );
      // The premise: these plans are generic, so the bounds are parameters, not constants.
      const { rows: planned } = await client.query<{
        name: string;
        generic: boolean;
      }>(
        `select name, generic_plans > 0 and custom_plans = 0 as generic
           from pg_prepared_statements where name = any($1) order by name`,
        [[TEMPLATE_COMPLETION_CANDIDATES.name, DESCRIBE_RELATION.name]],
      );
      expect(planned).toEqual([
        { name: DESCRIBE_RELATION.name, generic: true },
        { name: TEMPLATE_COMPLETION_CANDIDATES.name, generic: true },
      ]);
      // Counted after the plans ran, since files running alongside add relations named `items`
      // (client-strings.test.ts); no stored URI starts with 'a'.
      const { rows: counts } = await sql.query<{
        within: number;
        beyond: number;
        named: number;
        relations: number;
      }>(
        `select (select count(*)::int from pgmcp.resources where uri >= $1 and uri < $2) as within,
                (select count(*)::int from pgmcp.resources where uri >= $2) as beyond,
                (select count(*)::int from pg_class where relname = $3) as named,
                (select count(*)::int from pg_class) as relations`,
        [completion.from, completion.to, description.relation],
      );
      const { within, beyond, named, relations } = counts[0] ?? {
        within: NaN,
        beyond: NaN,
        named: NaN,
        relations: NaN,
      };
      // Completion takes the URIs in [from, to) and none of the stored URIs past `to`.
      expect(beyond).toBeGreaterThan(0);
      expect(uriScans).toHaveLength(1);
      expect(rowsRead(uriScans[0])).toBe(Math.min(within, completion.limit));
      // A description takes the relations of that name (rt_test's, and any other schema's), not
      // every relation in the database.
      expect(relations).toBeGreaterThan(named);
      expect(relationScans).toHaveLength(1);
      expect(rowsRead(relationScans[0])).toBeGreaterThanOrEqual(1);
      expect(rowsRead(relationScans[0])).toBeLessThanOrEqual(named);
    } finally {
      client.release();
    }
  });

  it('maps permission denied to FORBIDDEN without SQL or role names, and the connection stays usable', async () => {
    const error = await runRequestQuery(
      { db, principal: { role: OUTSIDER, claims: {} }, cancellation: signal },
      ITEMS,
      {},
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).key).toBe('FORBIDDEN');
    expect((error as ProtocolError).message).not.toContain(OUTSIDER);
    expect((error as ProtocolError).message).not.toContain('rt_test');
    const rows = await runRequestQuery(
      {
        db,
        principal: { role: READER, claims: { tenant: 'a' } },
        cancellation: signal,
      },
      ITEMS,
      {},
    );
    expect(rows).toHaveLength(2);
  });

  it('fails a role that does not exist and rolls the whole transaction back', async () => {
    const error = await runRequestQuery(
      {
        db,
        principal: { role: 'pgmcp_no_such_role', claims: {} },
        cancellation: signal,
      },
      WHO,
      {},
    ).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ProtocolError);
    const [after] = await runRequestQuery(
      { db, principal: { role: null, claims: {} }, cancellation: signal },
      WHO,
      {},
    );
    expect(after?.claims ?? '').toBe('');
  });

  it('costs one round trip with a role: begin, identity, query and commit leave before any answer returns', async () => {
    // A TCP proxy in front of Postgres that holds server answers back for 30 ms and records the
    // direction of every chunk: one round trip means no client bytes after the first answer.
    const directions: ('up' | 'down')[] = [];
    const target = new URL(testDatabaseUrl());
    const proxy = net.createServer((client) => {
      const upstream = net.connect(
        Number(target.port || 5432),
        target.hostname,
      );
      client.setNoDelay(true);
      upstream.setNoDelay(true);
      client.on('data', (chunk) => {
        directions.push('up');
        upstream.write(chunk);
      });
      upstream.on('data', (chunk) => {
        setTimeout(() => {
          directions.push('down');
          client.write(chunk);
        }, 30);
      });
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
      client.on('error', () => undefined);
      upstream.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const proxied = new URL(testDatabaseUrl());
    proxied.hostname = '127.0.0.1';
    proxied.port = String((proxy.address() as net.AddressInfo).port);
    // The one round trip is the driver internals' (src/db/driver/): on even in CI's public-API run.
    const viaProxy = createDatabase({
      connectionString: proxied.toString(),
      poolSize: 1,
      statementTimeoutMs: 5000,
      onError: () => undefined,
      driverPatches: 'on',
    });
    try {
      const principal = { role: READER, claims: { tenant: 'a' } };
      await runRequestQuery(
        { db: viaProxy, principal, cancellation: signal },
        ITEMS,
        {},
      ); // connect and prepare
      directions.length = 0;
      const rows = await runRequestQuery(
        { db: viaProxy, principal, cancellation: signal },
        ITEMS,
        {},
      );
      expect(rows).toHaveLength(2);
      const firstDown = directions.indexOf('down');
      expect(firstDown).toBeGreaterThan(0);
      expect(directions.slice(firstDown)).not.toContain('up');
    } finally {
      await viaProxy.close();
      proxy.close();
    }
  });

  it('refuses to start for a request that was already cancelled', async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(
      runRequestQuery(
        {
          db,
          principal: { role: null, claims: {} },
          cancellation: controller.signal,
        },
        WHO,
        {},
      ),
    ).rejects.toMatchObject({ key: 'TIMEOUT' });
  });

  it('keeps each pipelined transaction to its own role and claims, and an error to its own transaction', async () => {
    // Many requests at once share the pipelined connections (db/driver/request-pipeline.ts): their
    // transactions follow one another on the wire without waiting, interleaved across roles.
    const who = { ...WHO, name: 'test_who_pipelined', pipelined: true };
    const failing = {
      ...statement('test_fails_pipelined', 'select 1 / 0 as never'),
      pipelined: true,
    };
    const callers = Array.from({ length: 120 }, (_, index) =>
      index % 3 === 0
        ? { role: READER, claims: { tenant: `t${index}` } }
        : index % 3 === 1
          ? { role: OUTSIDER, claims: { tenant: `t${index}` } }
          : { role: READER, claims: { tenant: `t${index}` }, fails: true },
    );
    const answers = await Promise.all(
      callers.map((caller) =>
        caller.fails === true
          ? runRequestQuery(
              { db, principal: caller, cancellation: signal },
              failing,
              {},
            ).then(
              () => 'answered',
              (error: unknown) => (error as ProtocolError).key,
            )
          : runRequestQuery(
              { db, principal: caller, cancellation: signal },
              who,
              {},
            ),
      ),
    );
    callers.forEach((caller, index) => {
      if (caller.fails === true) expect(answers[index]).not.toBe('answered');
      else
        expect(answers[index]).toEqual([
          {
            who: caller.role,
            claims: JSON.stringify(caller.claims),
            read_only: 'on',
          },
        ]);
    });
  });
});
