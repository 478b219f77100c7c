// Composition root: the only file that wires protocol, resources and db together.
import type { DatabaseHandle } from './db/index.js';
import type { Logger } from './log.js';
import { createCursorCodec, createDiscoverMethod, createDispatcher, type Dispatcher, type MethodHandler } from './protocol/index.js';
import { createListResourcesMethod, createListTemplatesMethod, createReadResourceMethod, TTL_MS } from './resources/index.js';
import { SERVER_INFO } from './version.js';

export interface AppOptions {
  readonly db: DatabaseHandle;
  /** First signs cursors; all verify (rotation, replicas). */
  readonly cursorSecrets: readonly string[];
  readonly pageSize: number;
  readonly maxDirectoryEntries: number;
  readonly logger: Logger;
}

export interface App {
  readonly dispatcher: Dispatcher;
}

const INSTRUCTIONS =
  'pgmcp serves documents, files and notes stored in PostgreSQL as MCP resources. ' +
  'List them with resources/list (paginated), read one by URI with resources/read; ' +
  'reading a file:///…/ directory returns its entry and its children. ' +
  'resources/templates/list shows the URI patterns (notes:///{tag}/{slug}, file:///{+path}).';

/** Build the dispatcher with every method this server offers. */
export function createApp(options: AppOptions): App {
  const cursors = createCursorCodec(options.cursorSecrets);
  const listDeps = { db: options.db, cursors, pageSize: options.pageSize };
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- each handler's params type is checked by createMethod
  const methods = new Map<string, MethodHandler<any>>([
    ['server/discover', createDiscoverMethod({ capabilities: { resources: {} }, instructions: INSTRUCTIONS, ttlMs: TTL_MS.discover })],
    ['resources/list', createListResourcesMethod(listDeps)],
    ['resources/templates/list', createListTemplatesMethod(listDeps)],
    ['resources/read', createReadResourceMethod({ db: options.db, maxDirectoryEntries: options.maxDirectoryEntries })],
  ]);
  const dispatcher = createDispatcher({
    serverInfo: SERVER_INFO,
    methods,
    logError: (message, error) => options.logger.error(message, error),
  });
  return { dispatcher };
}
