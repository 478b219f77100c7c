// The catalog bench's client walk: resources/list from the first page to the last, following
// nextCursor on one keep-alive socket, timed per walk (run in a worker thread, like the loads).
import {
  connect,
  exchangeOk,
  request,
  serializeRequest,
  type LoadCaller,
} from './load.js';

export interface WalkSpec {
  readonly url: string;
  readonly walks: number;
  /** Page requests are sent by each caller in turn. */
  readonly callers: readonly LoadCaller[];
}

/** One walk: how long it took, and how many pages and items it returned. */
export interface Walk {
  readonly ms: number;
  readonly pages: number;
  readonly items: number;
}

/** Walk the whole list `spec.walks` times, one after another; every page must be a result. */
export async function walkList(spec: WalkSpec): Promise<Walk[]> {
  const url = new URL(spec.url);
  const connection = await connect(url);
  const walks: Walk[] = [];
  let sent = 0;
  try {
    for (let walk = 0; walk < spec.walks; walk += 1) {
      const started = performance.now();
      let cursor: string | undefined;
      let pages = 0;
      let items = 0;
      do {
        const caller = spec.callers[sent++ % spec.callers.length] as LoadCaller;
        const next = request(
          caller,
          'resources/list',
          cursor === undefined ? {} : { cursor },
        );
        const body = await exchangeOk(
          connection,
          serializeRequest(url, next.body, next.headers),
        );
        const { result } = JSON.parse(body.toString('utf8')) as {
          result: { resources: unknown[]; nextCursor?: string };
        };
        pages += 1;
        items += result.resources.length;
        cursor = result.nextCursor;
      } while (cursor !== undefined);
      walks.push({ ms: performance.now() - started, pages, items });
    }
  } finally {
    connection.close();
  }
  return walks;
}
