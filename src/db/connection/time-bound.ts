// Waiting for a promise no longer than a bound (a server that stops answering answers nothing).

/**
 * What `work` settles with, or a rejection with `message` once `ms` have passed, whichever comes
 * first; the timer never outlives the wait. `work` itself goes on: ending it is the caller's part
 * (its later rejection is handled here, so it is never unhandled).
 */
export async function withTimeout<T>(
  work: Promise<T>,
  ms: number,
  message: string,
): Promise<T> {
  work.catch(() => undefined);
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(message)), ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
