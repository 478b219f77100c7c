// The WAL reader's wait between attempts to read the slot, cut short when the reader stops.

/**
 * Resolve after `ms`, or at once when `signal` aborts. The abort listener is removed when the
 * timer fires: a replica waiting for the slot sleeps every few seconds for as long as it runs, and
 * one listener left per sleep would pile up on the one signal.
 */
export function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const aborted = (): void => {
      clearTimeout(timer);
      resolve();
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', aborted);
      resolve();
    }, ms);
    signal.addEventListener('abort', aborted, { once: true });
  });
}
