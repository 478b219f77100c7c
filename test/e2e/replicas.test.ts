// Issue 34 point 5: three built servers on one database behind a round-robin proxy on loopback
// (each HTTP request goes to the next live replica; a streamed answer stays where it started).
// Each replica's connections carry its name, a lock answers 503 everywhere but leaves every
// replica ready, a list walk crosses replicas page by page, a 2025-11-25 session is served by all
// three and stays one session on all of them (issue 34 point 1: its stream, subscriptions and
// DELETE), listen streams on every replica hear every change, and when the replica holding streams
// is killed mid-traffic its clients listen again elsewhere and pull what they missed from
// changes_since: every committed change reaches every client, and a 2025-11-25 session's stream
// reopened elsewhere still hears of what it subscribed to.
import type { ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadSeed } from '../../src/db/index.js';
import { SEEDS_DIRECTORY } from '../../src/config/index.js';
import { spawnBuiltServer } from '../setup/built-server.js';
import { migrateDatabase } from '../setup/migrate-database.js';
import { recreateDatabase } from '../setup/recreate-database.js';
import {
  call,
  listen,
  mcpHeaders,
  META,
  postRaw,
  testDatabaseUrl,
  until,
  walkList,
  type ListenStream,
} from '../setup/harness.js';
import {
  legacyPost,
  openSession,
  openSessionStream,
  sessionHeaders,
} from '../setup/legacy-client.js';

const RUN = randomUUID().slice(0, 8);
const PREFIX = `notes:///replicas-${RUN}/`;
const RESOURCES = 40;
const REPLICAS = 3;
/** A test-only header: route this request to the replica it names (to place streams). */
const PIN = 'x-test-replica';

interface Replica {
  readonly child: ChildProcess;
  readonly port: number;
  /** What it logged so far. */
  readonly output: () => string;
  dead: boolean;
}

interface Proxy {
  readonly url: string;
  /** Which replica served each request, in order of arrival, with its MCP method. */
  readonly served: { replica: number; method: string }[];
  close(): Promise<void>;
}

let sql: pg.Client;
let databaseUrl: string;
let replicas: Replica[] = [];
let proxy: Proxy;
let database: string;
const uris = Array.from(
  { length: RESOURCES },
  (_, index) => `${PREFIX}${index}`,
);

/** The built server on the test database; resolves once it serves. */
async function startReplica(): Promise<Replica> {
  const { child, url, output } = await spawnBuiltServer({
    DATABASE_URL: databaseUrl,
    PGMCP_AUTH: 'none',
    PGMCP_ROLE: 'support',
    PGMCP_PAGE_SIZE: '500',
    PGMCP_LOG_FORMAT: 'json',
  });
  return { child, port: Number(new URL(url).port), output, dead: false };
}

/**
 * Round robin over the live replicas, as a load balancer without affinity would: a replica that
 * refuses the connection is marked dead and the request goes to the next.
 */
async function startProxy(): Promise<Proxy> {
  const served: Proxy['served'] = [];
  let next = 0;
  const pick = (): number | undefined => {
    for (let tried = 0; tried < REPLICAS; tried += 1) {
      const index = next;
      next = (next + 1) % REPLICAS;
      if (!(replicas[index]?.dead ?? true)) return index;
    }
    return undefined;
  };
  const server = http.createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const pinned = request.headers[PIN];
      const forward = (index: number | undefined): void => {
        const replica = index === undefined ? undefined : replicas[index];
        if (index === undefined || replica === undefined) {
          response.writeHead(502).end();
          return;
        }
        const upstream = http.request(
          {
            host: '127.0.0.1',
            port: replica.port,
            method: request.method,
            path: request.url,
            headers: request.headers,
            agent: false,
          },
          (answer) => {
            served.push({
              replica: index,
              method: String(request.headers['mcp-method'] ?? request.method),
            });
            response.writeHead(answer.statusCode ?? 502, answer.headers);
            // A stream that has sent nothing yet (a 2025-11-25 GET stream) is open all the same.
            response.flushHeaders();
            answer.pipe(response);
            // A replica killed mid-stream: the client sees its stream cut.
            answer.on('error', () => response.destroy());
            answer.on('aborted', () => response.destroy());
          },
        );
        upstream.on('error', (error: NodeJS.ErrnoException) => {
          if (error.code === 'ECONNREFUSED' && pinned === undefined) {
            replica.dead = true;
            forward(pick());
          } else response.destroy();
        });
        upstream.end(Buffer.concat(chunks));
      };
      forward(pinned === undefined ? pick() : Number(pinned));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    served,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

beforeAll(async () => {
  // A database of its own: the exclusive locks of the lock case would hold up every other test
  // file's requests on the shared test database while they last.
  databaseUrl = await recreateDatabase(
    testDatabaseUrl(),
    'pgmcp_replicas_test',
  );
  await migrateDatabase(databaseUrl, async (admin) => {
    await loadSeed(
      admin,
      { seedsDirectory: SEEDS_DIRECTORY, dataset: 'demo' },
      () => undefined,
    );
  });
  sql = new pg.Client({ connectionString: databaseUrl });
  await sql.connect();
  database = new URL(databaseUrl).pathname.slice(1);
  await sql.query(
    `insert into pgmcp.resources (uri, name, text, readers)
       select $1 || g, 'replicas ' || g, 'version 0', '{support}' from generate_series(0, $2 - 1) g`,
    [PREFIX, RESOURCES],
  );
  replicas = await Promise.all(
    Array.from({ length: REPLICAS }, () => startReplica()),
  );
  proxy = await startProxy();
}, 120_000);

afterAll(async () => {
  for (const replica of replicas)
    if (replica.child.exitCode === null && replica.child.signalCode === null)
      replica.child.kill('SIGKILL');
  await proxy?.close();
  await sql.query('delete from pgmcp.resources where uri like $1', [
    `${PREFIX}%`,
  ]);
  await sql.end();
});

/** The replica that answered the last request through the proxy. */
const lastReplica = (): number | undefined => proxy.served.at(-1)?.replica;

interface Pulled {
  changes: { uri: string; kind: string }[];
  token: string;
  next: string;
  more: boolean;
}

/** Read pg://{database}?changes_since=… through the proxy, page by page. */
async function pullFrom(
  start: string,
): Promise<{ uris: string[]; next: string }> {
  const pulled: string[] = [];
  let uri = start;
  for (;;) {
    const { result, error } = await call(proxy.url, 'resources/read', { uri });
    expect(error).toBeUndefined();
    const [content] = result?.['contents'] as { text: string }[];
    const page = JSON.parse(content?.text ?? '{}') as Pulled;
    pulled.push(...page.changes.map((change) => change.uri));
    if (!page.more) return { uris: pulled, next: page.next };
    uri = page.next;
  }
}

describe('three replicas behind a round-robin proxy', () => {
  it('tells the replicas apart in pg_stat_activity: the listener of each names its process', async () => {
    const { rows } = await sql.query<{ name: string }>(
      `select application_name as name from pg_stat_activity
        where datname = current_database() and application_name like 'pgmcp-listener/%'`,
    );
    const names = rows.map((row) => row.name);
    for (const replica of replicas)
      expect(
        names.filter((name) => name.endsWith(`/${replica.child.pid}`)),
      ).toHaveLength(1);
  });

  it('walks resources/list with every page on a different replica than the one before', async () => {
    const pageReplicas: (number | undefined)[] = [];
    const { uris: listed, pages } = await walkList(proxy.url, () => {
      pageReplicas.push(lastReplica());
    });
    expect(pages.length).toBeGreaterThanOrEqual(REPLICAS);
    for (let page = 1; page < pageReplicas.length; page += 1)
      expect(pageReplicas[page]).not.toBe(pageReplicas[page - 1]);
    expect(new Set(pageReplicas).size).toBe(REPLICAS);
    // Cursors signed by one replica are honoured by the others: one walk, no page twice.
    expect(new Set(listed).size).toBe(listed.length);
    expect(listed).toEqual(expect.arrayContaining(uris));
  });

  it('serves one 2025-11-25 session through all three: initialize, reads and tools', async () => {
    const before = proxy.served.length;
    const session = await openSession(proxy.url);
    const headers = sessionHeaders(session);
    const read = await legacyPost(
      proxy.url,
      { method: 'resources/read', params: { uri: uris[0] } },
      headers,
    );
    expect(read.status).toBe(200);
    expect(JSON.stringify(read.result)).toContain('version 0');
    const tools = await legacyPost(
      proxy.url,
      { method: 'tools/list' },
      headers,
    );
    expect(tools.status).toBe(200);
    const query = await legacyPost(
      proxy.url,
      {
        method: 'tools/call',
        params: { name: 'query', arguments: { sql: 'select 1 as one' } },
      },
      headers,
    );
    expect(query.status).toBe(200);
    expect(query.result?.['isError']).toBeUndefined();
    const list = await legacyPost(
      proxy.url,
      { method: 'resources/list' },
      headers,
    );
    expect(list.status).toBe(200);
    const used = new Set(
      proxy.served.slice(before).map((entry) => entry.replica),
    );
    expect(used.size).toBe(REPLICAS);
  });

  it('answers reads on every replica 503 with Retry-After under an exclusive lock on pgmcp.resources and pgmcp.changes, and keeps every replica ready', async () => {
    const uri = uris[0] as string;
    await sql.query('begin');
    try {
      await sql.query(
        'lock pgmcp.resources, pgmcp.changes in access exclusive mode',
      );
      const before = proxy.served.length;
      const reads = await Promise.all(
        replicas.map(() =>
          postRaw(
            proxy.url,
            JSON.stringify({
              jsonrpc: '2.0',
              id: 1,
              method: 'resources/read',
              params: { _meta: META, uri },
            }),
            mcpHeaders('resources/read', uri),
          ),
        ),
      );
      for (const read of reads) {
        expect(read.status, read.text).toBe(503);
        expect(read.headers.get('retry-after')).toMatch(/^\d+$/);
      }
      expect(
        new Set(proxy.served.slice(before).map((entry) => entry.replica)).size,
      ).toBe(REPLICAS);
      // Every replica's feed met the lock reading the log and gave up on it (its lock_timeout),
      // while the lock is still held; each stays ready.
      await until(
        () =>
          replicas.every((replica) =>
            replica
              .output()
              .includes('reading the change log waited too long for a lock'),
          ),
        30_000,
        'every replica to fail a read of the change log on the lock',
      );
      for (const replica of replicas) {
        const ready = await fetch(`http://127.0.0.1:${replica.port}/readyz`);
        expect(ready.status, await ready.text()).toBe(200);
      }
    } finally {
      await sql.query('commit');
    }
  });

  it('keeps a 2025-11-25 session one session on every replica: the newest GET stream wins, a subscription made elsewhere is heard on it, and a DELETE elsewhere ends it', async () => {
    const id = await openSession(proxy.url);
    const on = (replica: number) => ({
      ...sessionHeaders(id),
      [PIN]: String(replica),
    });
    const first = await openSessionStream(proxy.url, id, { [PIN]: '1' });
    expect(first.status).toBe(200);
    const newest = await openSessionStream(proxy.url, id, { [PIN]: '2' });
    expect(newest.status).toBe(200);
    await until(() => first.ended(), 15_000, 'the older stream to end');
    const uri = uris[1] as string;
    const subscribed = await legacyPost(
      proxy.url,
      { method: 'resources/subscribe', params: { uri } },
      on(0),
    );
    expect(subscribed.result).toEqual({});
    await sql.query('update pgmcp.resources set text = $2 where uri = $1', [
      uri,
      'version subscribed',
    ]);
    await newest.waitFor(() => newest.updated().includes(uri), 15_000);
    const deleted = await fetch(proxy.url, {
      method: 'DELETE',
      headers: on(1),
    });
    expect(deleted.status).toBe(204);
    await until(() => newest.ended(), 15_000, 'the stream on replica 2 to end');
  });

  it('delivers every committed change to streams on every replica, and to clients of a killed replica after they listen again and pull changes_since; a 2025-11-25 stream reopened elsewhere keeps its subscriptions', async () => {
    // Two clients per replica. Each takes a changes_since token first, as a client that means
    // to resume does, then listens on its replica for updates of the test's resources.
    const clients = await Promise.all(
      Array.from({ length: REPLICAS * 2 }, async (_, index) => {
        const { next: token } = await pullFrom(
          `pg://${database}?changes_since=`,
        );
        const home = index % REPLICAS;
        const stream = await listen(
          proxy.url,
          { resourceSubscriptions: uris },
          { headers: { [PIN]: String(home) } },
        );
        expect(stream.status).toBe(200);
        await stream.waitFor((messages) => messages.length >= 1);
        return {
          home,
          token,
          streams: [stream] as ListenStream[],
          pulled: [] as string[],
        };
      }),
    );
    const victim = 0;
    const killed = replicas[victim] as Replica;
    // A 2025-11-25 session subscribed through another replica, its GET stream on the victim.
    const session = await openSession(proxy.url);
    const legacyUri = uris.at(-1) as string;
    expect(
      (
        await legacyPost(
          proxy.url,
          { method: 'resources/subscribe', params: { uri: legacyUri } },
          { ...sessionHeaders(session), [PIN]: '1' },
        )
      ).result,
    ).toEqual({});
    const legacyStream = await openSessionStream(proxy.url, session, {
      [PIN]: String(victim),
    });
    expect(legacyStream.status).toBe(200);

    // Commit one change per resource, one transaction each; kill the victim a third of the way.
    const committed: string[] = [];
    for (const [index, uri] of uris.entries()) {
      if (index === Math.floor(RESOURCES / 3)) {
        killed.child.kill('SIGKILL');
        killed.dead = true;
      }
      await sql.query('update pgmcp.resources set text = $2 where uri = $1', [
        uri,
        `version ${index + 1}`,
      ]);
      committed.push(uri);
    }

    // The victim's clients see their streams cut, listen again through the proxy (another
    // replica now) and then pull what was committed since their token.
    await Promise.all(
      clients
        .filter((client) => client.home === victim)
        .map(async (client) => {
          const [first] = client.streams;
          await first?.ended.then(
            () => undefined,
            () => undefined,
          );
          const again = await listen(proxy.url, {
            resourceSubscriptions: uris,
          });
          expect(again.status).toBe(200);
          expect(lastReplica()).not.toBe(victim);
          await again.waitFor((messages) => messages.length >= 1);
          client.streams.push(again);
          client.pulled.push(...(await pullFrom(client.token)).uris);
        }),
    );

    const heard = (client: (typeof clients)[number]): Set<string> =>
      new Set([
        ...client.streams.flatMap((stream) => stream.updated()),
        ...client.pulled,
      ]);
    await until(
      () =>
        clients.every((client) =>
          committed.every((uri) => heard(client).has(uri)),
        ),
      30_000,
      () =>
        `every client to hear all ${committed.length} changes; heard ${clients
          .map((client) => `${client.home}: ${heard(client).size}`)
          .join(', ')}`,
    );
    for (const client of clients) {
      const lost = committed.filter((uri) => !heard(client).has(uri));
      expect(lost, `client on replica ${client.home}`).toEqual([]);
      // The victim's streams were cut before the changes committed after the kill; streams on
      // live replicas heard every change live, with no pull.
      if (client.home === victim)
        expect(new Set(client.streams[0]?.updated()).size).toBeLessThan(
          committed.length,
        );
      else
        expect(new Set(client.streams[0]?.updated()).size).toBe(
          committed.length,
        );
    }
    for (const client of clients)
      for (const stream of client.streams) stream.close();

    // The session's stream was cut with the victim; reopened through the proxy on a live replica,
    // it still hears of what the session subscribed to before.
    await until(() => legacyStream.ended(), 15_000, 'the cut stream to end');
    const reopened = await openSessionStream(proxy.url, session);
    expect(reopened.status).toBe(200);
    expect(lastReplica()).not.toBe(victim);
    await sql.query('update pgmcp.resources set text = $2 where uri = $1', [
      legacyUri,
      'version reopened',
    ]);
    await reopened.waitFor(
      () => reopened.updated().includes(legacyUri),
      15_000,
    );
    reopened.close();
  });
});
