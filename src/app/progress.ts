// Progress for long work: a redrawn bar on a TTY, a few plain lines otherwise.

/** Returns a progress callback (done, total, label) writing to `stream`. */
export function createProgress(
  title: string,
  stream: NodeJS.WriteStream = process.stderr,
): (done: number, total: number, label: string) => void {
  let lastPercent = -1;
  return function report(done, total, label) {
    const percent = total === 0 ? 100 : Math.floor((done / total) * 100);
    if (stream.isTTY) {
      const width = 30;
      const filled = Math.round((percent / 100) * width);
      stream.write(
        `\r${title} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(percent).padStart(3)}% ${label.padEnd(28).slice(0, 28)}`,
      );
      if (done >= total) stream.write('\n');
      return;
    }
    // Plain lines every 10% so logs stay short.
    const step = Math.floor(percent / 10) * 10;
    if (step > lastPercent || done >= total) {
      lastPercent = step;
      stream.write(`${title}: ${percent}% (${done}/${total}) ${label}\n`);
    }
  };
}
