// Newline-delimited framing for stdio (spec §14.1): bytes in, one string per line out, within a
// byte limit. Frames on bytes and decodes whole lines, so a multi-byte UTF-8 character split
// across two reads stays intact (0x0A never occurs inside a UTF-8 sequence).

const NEWLINE = 0x0a;

export class StdioFramer {
  #parts: Buffer[] = [];
  #size = 0;
  // After an over-long line: drop bytes up to the next newline.
  #discarding = false;

  /**
   * @param onLine each non-blank line, without its line ending
   * @param onTooLarge once per line whose unfinished part passes `maxBytes` (the line is dropped)
   */
  constructor(
    readonly maxBytes: number,
    readonly onLine: (line: string) => void,
    readonly onTooLarge: () => void,
  ) {}

  push(chunk: Buffer): void {
    let start = 0;
    let newline = chunk.indexOf(NEWLINE);
    while (newline !== -1) {
      this.#parts.push(chunk.subarray(start, newline));
      const line = this.#take().replace(/\r$/, '');
      if (this.#discarding) this.#discarding = false;
      else if (line.trim() !== '') this.onLine(line);
      start = newline + 1;
      newline = chunk.indexOf(NEWLINE, start);
    }
    if (start < chunk.length) {
      this.#parts.push(chunk.subarray(start));
      this.#size += chunk.length - start;
    }
    if (this.#size > this.maxBytes) {
      // An over-long line: answer once, then drop the rest of it up to the next newline.
      this.#parts = [];
      this.#size = 0;
      if (!this.#discarding) this.onTooLarge();
      this.#discarding = true;
    }
  }

  /** The input ended: a last line without a newline is still a message. */
  end(): void {
    const rest = this.#take();
    if (!this.#discarding && rest.trim() !== '') this.onLine(rest);
  }

  /** The buffered bytes as text; the buffer is emptied. */
  #take(): string {
    const text =
      this.#parts.length === 1
        ? (this.#parts[0] as Buffer).toString('utf8')
        : Buffer.concat(this.#parts).toString('utf8');
    this.#parts = [];
    this.#size = 0;
    return text;
  }
}
