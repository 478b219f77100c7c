// A 2025-11-25 client over Streamable HTTP for tests: POSTs with a session, the session's GET
// stream, and every answer and notification checked against the 2025-11-25 schemas.
import { until } from './harness.js';
import { assertValidNotification, assertValidResponse } from './spec-schema.js';

export const LEGACY_VERSION = '2025-11-25';

export interface LegacyAnswer {
  status: number;
  headers: Headers;
  body: Record<string, unknown> | undefined;
  result?: Record<string, unknown>;
  error?: { code: number; message: string; data?: Record<string, unknown> };
  /** Notifications that came before the answer when it was sent as SSE (e.g. progress). */
  notifications: Record<string, unknown>[];
}

let nextId = 1;

/** POST one legacy message (a request when `id` is given, else a notification). */
export async function legacyPost(
  url: string,
  message: {
    method: string;
    params?: Record<string, unknown>;
    id?: string | number | null;
  },
  headers: Record<string, string> = {},
): Promise<LegacyAnswer> {
  const id = message.id === null ? undefined : (message.id ?? nextId++);
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      ...(id === undefined ? {} : { id }),
      method: message.method,
      ...(message.params === undefined ? {} : { params: message.params }),
    }),
  });
  const text = await response.text();
  const sse = (response.headers.get('content-type') ?? '').startsWith(
    'text/event-stream',
  );
  const messages = sse
    ? sseMessages(text)
    : text === ''
      ? []
      : [JSON.parse(text) as Record<string, unknown>];
  const notifications = messages.filter(
    (each) => 'method' in each && !('id' in each),
  );
  for (const each of notifications) assertValidNotification(each, 'legacy');
  const body = messages.find((each) => !notifications.includes(each));
  if (body !== undefined) assertValidResponse(message.method, body, 'legacy');
  return {
    status: response.status,
    headers: response.headers,
    body,
    notifications,
    result: body?.['result'] as Record<string, unknown> | undefined,
    error: body?.['error'] as LegacyAnswer['error'],
  };
}

/** The JSON-RPC messages of a whole SSE body, one per event's data lines. */
function sseMessages(text: string): Record<string, unknown>[] {
  return text
    .split(/\r?\n\r?\n/)
    .map((event) =>
      event
        .split(/\r?\n/)
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(5).trimStart())
        .join('\n'),
    )
    .filter((data) => data !== '')
    .map((data) => JSON.parse(data) as Record<string, unknown>);
}

/** initialize + notifications/initialized; returns the session id. */
export async function openSession(
  url: string,
  headers: Record<string, string> = {},
  protocolVersion = LEGACY_VERSION,
): Promise<string> {
  const answer = await legacyPost(
    url,
    {
      method: 'initialize',
      params: {
        protocolVersion,
        capabilities: {},
        clientInfo: { name: 'legacy-test', version: '1.0.0' },
      },
    },
    headers,
  );
  const id = answer.headers.get('mcp-session-id');
  if (answer.status !== 200 || id === null)
    throw new Error(
      `initialize answered ${answer.status}: ${JSON.stringify(answer.body)}`,
    );
  const initialized = await legacyPost(
    url,
    { method: 'notifications/initialized', id: null },
    sessionHeaders(id, headers),
  );
  if (initialized.status !== 202)
    throw new Error(`notifications/initialized answered ${initialized.status}`);
  return id;
}

export function sessionHeaders(
  id: string,
  headers: Record<string, string> = {},
): Record<string, string> {
  return {
    ...headers,
    'Mcp-Session-Id': id,
    'MCP-Protocol-Version': LEGACY_VERSION,
  };
}

export interface SessionStream {
  readonly status: number;
  readonly messages: { method?: string; params?: Record<string, unknown> }[];
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>;
  updated(): string[];
  listChanges(): number;
  /** Whether the server ended the stream (or close() aborted it). */
  ended(): boolean;
  close(): void;
}

/** GET the session's SSE stream and collect its notifications (each validated as 2025-11-25). */
export async function openSessionStream(
  url: string,
  id: string,
  headers: Record<string, string> = {},
): Promise<SessionStream> {
  const controller = new AbortController();
  const response = await fetch(url, {
    method: 'GET',
    headers: { Accept: 'text/event-stream', ...sessionHeaders(id, headers) },
    signal: controller.signal,
  });
  const messages: SessionStream['messages'] = [];
  let ended = false;
  if (
    (response.headers.get('content-type') ?? '').startsWith('text/event-stream')
  ) {
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    void (async () => {
      let buffer = '';
      try {
        for (;;) {
          const { done, value } = await reader.read();
          if (done) break;
          buffer += decoder.decode(value, { stream: true });
          let boundary = buffer.indexOf('\n\n');
          while (boundary !== -1) {
            const data = buffer
              .slice(0, boundary)
              .split('\n')
              .filter((line) => line.startsWith('data:'))
              .map((line) => line.slice(5).trimStart())
              .join('\n');
            buffer = buffer.slice(boundary + 2);
            if (data !== '') {
              const message = JSON.parse(
                data,
              ) as SessionStream['messages'][number];
              assertValidNotification(message, 'legacy');
              messages.push(message);
            }
            boundary = buffer.indexOf('\n\n');
          }
        }
      } catch {
        // aborted by close()
      }
      ended = true;
    })();
  } else {
    ended = true;
    await response.body?.cancel();
  }
  return {
    status: response.status,
    messages,
    waitFor: async (predicate, timeoutMs = 10_000) => {
      await until(
        predicate,
        timeoutMs,
        () =>
          `the session stream's condition; got ${JSON.stringify(messages).slice(0, 2000)}`,
      );
    },
    updated: () =>
      messages
        .filter(
          (message) => message.method === 'notifications/resources/updated',
        )
        .map((message) => message.params?.['uri'] as string),
    listChanges: () =>
      messages.filter(
        (message) => message.method === 'notifications/resources/list_changed',
      ).length,
    ended: () => ended,
    close: () => controller.abort(),
  };
}
