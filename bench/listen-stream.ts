// A subscriptions/listen stream over the real transport, as the benches open one: a 2026-07-28
// POST with the caller's bearer token, its SSE events read until the stream is closed.

/** An open, acknowledged listen stream. */
export interface OpenStream {
  close(): void;
}

/**
 * Listen at `endpoint` for `uris`; resolves once the server acknowledged the stream, rejects when
 * it answers anything but a stream or the stream ends first. `onUpdated` runs for each
 * notifications/resources/updated event.
 */
export async function openListenStream(
  endpoint: string,
  {
    authorization,
    uris,
    onUpdated,
  }: { authorization: string; uris: string[]; onUpdated: () => void },
): Promise<OpenStream> {
  const controller = new AbortController();
  const response = await fetch(endpoint, {
    method: 'POST',
    headers: {
      'Content-Type': 'application/json',
      Accept: 'application/json, text/event-stream',
      Authorization: authorization,
      'Mcp-Method': 'subscriptions/listen',
      'MCP-Protocol-Version': '2026-07-28',
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 'bench',
      method: 'subscriptions/listen',
      params: {
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientCapabilities': {},
        },
        notifications: { resourceSubscriptions: uris },
      },
    }),
    signal: controller.signal,
  });
  if (response.status !== 200 || response.body === null)
    throw new Error(`listen answered ${response.status}`);
  await readEvents(response.body, onUpdated);
  return { close: () => controller.abort() };
}

/** Read `body`'s events in the background; resolves at the acknowledgement. */
function readEvents(
  body: ReadableStream<Uint8Array>,
  onUpdated: () => void,
): Promise<void> {
  return new Promise<void>((acknowledged, reject) => {
    void (async () => {
      const decoder = new TextDecoder();
      let tail = '';
      try {
        for await (const chunk of body as AsyncIterable<Uint8Array>) {
          const events = (tail + decoder.decode(chunk, { stream: true })).split(
            '\n\n',
          );
          tail = events.pop() ?? '';
          for (const event of events)
            if (event.includes('notifications/resources/updated')) onUpdated();
            else if (event.includes('subscriptions/acknowledged'))
              acknowledged();
        }
      } catch {
        // Aborted: the bench closed it.
      }
      // After the acknowledgement this settles nothing.
      reject(new Error('the listen stream ended before it was acknowledged'));
    })();
  });
}
