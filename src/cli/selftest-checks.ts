// The checks `pgmcp selftest` runs, each the way a user's client would: requests through the
// server's own dispatcher as one principal, a listen stream, and one committed change.
import { randomUUID } from 'node:crypto';
import type { Principal } from '../auth/index.js';
import {
  serializeMessage,
  type Dispatcher,
  type StreamSink,
} from '../protocol/index.js';
import { parseUriTemplate } from '../resources/index.js';

/** One check's outcome: a line of the report. */
export interface CheckResult {
  readonly name: string;
  readonly ok: boolean;
  readonly detail: string;
}

/** What the checks run against. */
export interface SelftestTarget {
  readonly dispatcher: Dispatcher;
  readonly principal: Principal;
  /** Commit a stored resource readable by `readers`; resolves to its removal (db/ commitProbeResource). */
  readonly commitProbe: (
    uri: string,
    readers: readonly string[],
  ) => Promise<() => Promise<void>>;
  /** How long to wait for the committed change on the listen stream. */
  readonly waitMs?: number;
}

/** A check that cannot pass, with the reason. */
class CheckFailure extends Error {}

type Json = Record<string, unknown>;

/** Stop walking a list after this many pages: a list that never ends is a failure. */
const MAX_PAGES = 10_000;

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': {
    name: 'pgmcp-selftest',
    version: '1',
  },
};

let nextId = 1;

/** One request through the dispatcher: its result, or a CheckFailure naming the error. */
async function request(
  target: SelftestTarget,
  method: string,
  params: Json = {},
): Promise<Json> {
  const outcome = await target.dispatcher.dispatch(
    {
      jsonrpc: '2.0',
      id: `selftest-${nextId++}`,
      method,
      params: { _meta: META, ...params },
    },
    { principal: target.principal, signal: new AbortController().signal },
  );
  if (outcome.kind !== 'response')
    throw new CheckFailure(`${method} did not answer with a response`);
  const { response } = outcome;
  if ('error' in response)
    throw new CheckFailure(
      `${method} answered ${response.error.code}: ${response.error.message}`,
    );
  // The result is what a client would receive: pre-serialized parts spliced in.
  return (JSON.parse(serializeMessage(response)) as { result: Json }).result;
}

/** Every resources/list page, checking each is disjoint from those before. */
async function listPages(
  target: SelftestTarget,
): Promise<{ uris: string[]; pages: number; firstCursor: string | undefined }> {
  const seen = new Set<string>();
  let cursor: string | undefined;
  let firstCursor: string | undefined;
  let pages = 0;
  do {
    const result = await request(
      target,
      'resources/list',
      cursor === undefined ? {} : { cursor },
    );
    pages += 1;
    for (const { uri } of result['resources'] as { uri: string }[]) {
      if (seen.has(uri)) throw new CheckFailure(`page ${pages} repeats ${uri}`);
      seen.add(uri);
    }
    cursor = result['nextCursor'] as string | undefined;
    if (pages === 1) firstCursor = cursor;
    if (pages >= MAX_PAGES && cursor !== undefined)
      throw new CheckFailure(`no last page after ${MAX_PAGES} pages`);
  } while (cursor !== undefined);
  return { uris: [...seen], pages, firstCursor };
}

/** A cursor like the server's with its signature changed (or made up, when the list has one page). */
function forge(cursor: string | undefined): string {
  const payload = Buffer.from('{"c":"resources","k":["0"]}').toString(
    'base64url',
  );
  if (cursor === undefined) return `v1.${payload}.${'A'.repeat(43)}`;
  const last = cursor.at(-2) === 'A' ? 'B' : 'A';
  return `${cursor.slice(0, -2)}${last}${cursor.slice(-1)}`;
}

async function forgedCursor(
  target: SelftestTarget,
  firstCursor: string | undefined,
): Promise<string> {
  try {
    await request(target, 'resources/list', { cursor: forge(firstCursor) });
  } catch (error) {
    if (error instanceof CheckFailure && error.message.includes('-32602'))
      return 'rejected with -32602';
    throw error;
  }
  throw new CheckFailure('a forged cursor was answered with a page');
}

async function templateInstance(
  target: SelftestTarget,
  uris: readonly string[],
): Promise<string> {
  const result = await request(target, 'resources/templates/list');
  const templates = result['resourceTemplates'] as { uriTemplate: string }[];
  if (templates.length === 0)
    throw new CheckFailure('no resource template listed');
  for (const { uriTemplate } of templates) {
    const template = parseUriTemplate(uriTemplate);
    const instance = uris.find((uri) => template.match(uri) !== undefined);
    if (instance === undefined) continue;
    const read = await request(target, 'resources/read', { uri: instance });
    if ((read['contents'] as unknown[]).length === 0)
      throw new CheckFailure(`reading ${instance} returned no contents`);
    return `${uriTemplate} listed; read ${instance}`;
  }
  throw new CheckFailure(
    `${templates.length} templates listed, none matching a listed resource`,
  );
}

async function digestPrompt(target: SelftestTarget): Promise<string> {
  const listed = await request(target, 'prompts/list');
  if (
    !(listed['prompts'] as { name: string }[]).some((p) => p.name === 'digest')
  )
    throw new CheckFailure(
      'prompt digest not offered (the demo seed has it; docs/prompts.md)',
    );
  const completed = await request(target, 'completion/complete', {
    ref: { type: 'ref/prompt', name: 'digest' },
    argument: { name: 'tag', value: '' },
  });
  const [tag] = (completed['completion'] as { values: string[] }).values;
  if (tag === undefined) throw new CheckFailure('no tag the role can read');
  const got = await request(target, 'prompts/get', {
    name: 'digest',
    arguments: { tag },
  });
  const links = (got['messages'] as { content: Json }[])
    .map((message) => message.content)
    .filter((content) => content['type'] === 'resource_link')
    .map((content) => content['uri'] as string);
  if (links.length === 0)
    throw new CheckFailure(`tag ${tag}: no resource_link`);
  if (new Set(links).size !== links.length)
    throw new CheckFailure(`tag ${tag}: a resource is linked twice`);
  for (const uri of links) await request(target, 'resources/read', { uri });
  return `tag ${tag}: ${links.length} resource_links, each readable`;
}

/** tools/call `name` with `args`, after checking tools/list offers it. */
async function tool(
  target: SelftestTarget,
  name: string,
  args: Json,
): Promise<string> {
  let listed: Json;
  try {
    listed = await request(target, 'tools/list');
  } catch {
    throw new CheckFailure(`tool ${name} not offered`);
  }
  if (!(listed['tools'] as { name: string }[]).some((t) => t.name === name))
    throw new CheckFailure(`tool ${name} not offered`);
  const result = await request(target, 'tools/call', {
    name,
    arguments: args,
  });
  if (result['isError'] === true)
    throw new CheckFailure(
      `${name} answered an error: ${JSON.stringify(result['content']).slice(0, 200)}`,
    );
  return `${name} answered ${(result['content'] as unknown[]).length} content blocks`;
}

/** Open a listen stream for list changes, commit a probe resource, and wait for the notification. */
async function liveChange(target: SelftestTarget): Promise<string> {
  const outcome = await target.dispatcher.dispatch(
    {
      jsonrpc: '2.0',
      id: `selftest-listen-${nextId++}`,
      method: 'subscriptions/listen',
      params: { _meta: META, notifications: { resourcesListChanged: true } },
    },
    { principal: target.principal, signal: new AbortController().signal },
  );
  if (outcome.kind !== 'stream')
    throw new CheckFailure(
      `subscriptions/listen did not open a stream: ${JSON.stringify(outcome.kind === 'response' ? outcome.response : outcome).slice(0, 200)}`,
    );
  let heard: () => void = () => undefined;
  const arrived = new Promise<void>((resolve) => (heard = resolve));
  const sink: StreamSink = {
    write(message) {
      if (message.includes('"notifications/resources/list_changed"')) heard();
      return true;
    },
    pendingBytes: 0,
    onDrain: (listener) => listener(),
    end: () => undefined,
  };
  outcome.stream.attach(sink);
  let remove: (() => Promise<void>) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    remove = await target.commitProbe(`pgmcp-selftest:///${randomUUID()}`, [
      target.principal.role ?? 'public',
    ]);
    const waitMs = target.waitMs ?? 10_000;
    const timedOut = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), waitMs);
    });
    if ((await Promise.race([arrived, timedOut])) === 'timeout')
      throw new CheckFailure(
        `no notification within ${waitMs} ms of the commit (is the change feed listening?)`,
      );
    return 'a committed insert arrived as notifications/resources/list_changed';
  } finally {
    clearTimeout(timer);
    outcome.stream.cancel();
    await remove?.();
  }
}

/** Run `check`, turning what it throws into a failed line (an unexpected error says what it was). */
async function run(
  name: string,
  check: () => Promise<string>,
): Promise<CheckResult> {
  try {
    return { name, ok: true, detail: await check() };
  } catch (error) {
    const detail =
      error instanceof Error ? error.message : `unexpected: ${String(error)}`;
    return { name, ok: false, detail };
  }
}

/** Every check, in order; one result each. */
export async function runSelftest(
  target: SelftestTarget,
): Promise<CheckResult[]> {
  const results: CheckResult[] = [];
  let listing: Awaited<ReturnType<typeof listPages>> | undefined;
  results.push(
    await run('resources/list pages', async () => {
      listing = await listPages(target);
      return `${listing.uris.length} resources in ${listing.pages} pages, disjoint; the last has no nextCursor`;
    }),
  );
  results.push(
    await run('forged cursor', () =>
      forgedCursor(target, listing?.firstCursor),
    ),
    await run('resource template', () =>
      templateInstance(target, listing?.uris ?? []),
    ),
    await run('digest prompt', () => digestPrompt(target)),
    await run('search tool', () => tool(target, 'search', { query: 'note' })),
    await run('fetch tool', () =>
      tool(target, 'fetch', { id: listing?.uris[0] ?? '' }),
    ),
    await run('live change', () => liveChange(target)),
  );
  return results;
}

/** One line per check: "pass <name>: <detail>" or "fail <name>: <reason>". */
export function formatResult(result: CheckResult): string {
  return `${result.ok ? 'pass' : 'fail'} ${result.name}: ${result.detail}\n`;
}
