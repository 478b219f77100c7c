// The per-request contexts the HTTP transport and the dispatcher make: what handlers can read.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LOGIN_PRINCIPAL } from '../../src/auth/index.js';
import {
  createDispatcher,
  createMethod,
  EmptyParamsSchema,
  type Dispatcher,
  type RequestContext,
  type TransportContext,
} from '../../src/protocol/index.js';
import {
  startHttpTransport,
  type HttpTransport,
} from '../../src/transport/index.js';
import { META, mcpHeaders } from '../setup/harness.js';

let transport: HttpTransport;
const seen: {
  transport?: TransportContext;
  handler?: RequestContext;
  aborted?: boolean;
} = {};

beforeAll(async () => {
  const dispatcher = createDispatcher({
    serverInfo: { name: 'test', version: '0' },
    methods: new Map([
      [
        'test/context',
        createMethod({
          params: EmptyParamsSchema,
          handle: (_params, ctx) => {
            seen.handler = ctx;
            seen.aborted = ctx.aborted;
            return Promise.resolve({});
          },
        }),
      ],
    ]),
    logError: () => undefined,
  });
  const spy: Dispatcher = {
    parse: (value) => dispatcher.parse(value),
    fail: (error, id) => dispatcher.fail(error, id),
    dispatch: (message, context) => {
      seen.transport = context;
      return dispatcher.dispatch(message, context);
    },
  };
  transport = await startHttpTransport({
    host: '127.0.0.1',
    port: 0,
    path: '/mcp',
    dispatcher: spy,
    maxBodyBytes: 64 * 1024,
    allowedHosts: ['127.0.0.1'],
    allowedOrigins: [],
    authenticate: () => LOGIN_PRINCIPAL,
    log: () => undefined,
  });
});

afterAll(async () => {
  await transport.close();
});

describe('request contexts', () => {
  it('give handlers the principal, the request id and a cancellation state that is not yet aborted', async () => {
    const response = await fetch(transport.url, {
      method: 'POST',
      headers: mcpHeaders('test/context'),
      body: JSON.stringify({
        jsonrpc: '2.0',
        id: 7,
        method: 'test/context',
        params: { _meta: META },
      }),
    });
    expect(response.status).toBe(200);
    const { transport: outer, handler } = seen;
    expect(outer?.principal).toEqual(LOGIN_PRINCIPAL);
    expect(handler?.principal).toEqual(LOGIN_PRINCIPAL);
    expect(handler?.id).toBe(7);
    expect(seen.aborted).toBe(false);
    expect(handler?.signal.aborted).toBe(false);
  });
});
