// Answers that depend only on the caller's role (a prompts/list page: the table's policy reads the
// role's memberships, nothing from the token; a navigator), kept per role so that a repeated one
// costs no statement.

export interface RolePageMemoOptions {
  /** Most pages kept; the least recently used goes first. */
  readonly maxEntries: number;
  /**
   * Longest a page stands. Role memberships change without an event the change feed reports
   * (`GRANT role TO` fires no event trigger), so a page is dropped after the role decisions' age.
   */
  readonly maxAgeMs: number;
  /** Epoch ms (tests inject a clock). */
  readonly now?: () => number;
}

/**
 * Pages keyed by role and position. `clear()` (the listed table or the schema changed) drops them
 * all and starts a new generation: a page read before the clear and stored after it is refused,
 * so a change is never hidden behind a page read from an older snapshot.
 */
export class RolePageMemo<TPage> {
  readonly #entries = new Map<
    string,
    { readonly page: TPage; readonly storedAt: number }
  >();
  readonly #options: RolePageMemoOptions;
  #generation = 0;
  // Off until a change feed can clear it: without one, a kept page could outlive a change.
  #on = false;

  constructor(options: RolePageMemoOptions) {
    this.#options = options;
  }

  /** Which generation a page about to be read belongs to (pass it back to `set`). */
  get generation(): number {
    return this.#generation;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Start keeping pages: a change feed now clears the memo when the listed table changes. */
  start(): void {
    this.#on = true;
  }

  get(role: string | null, position: string): TPage | undefined {
    if (!this.#on) return undefined;
    const key = keyOf(role, position);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    if (this.#now() - entry.storedAt >= this.#options.maxAgeMs) {
      this.#entries.delete(key);
      return undefined;
    }
    // Re-inserting keeps the Map's first key the least recently used.
    this.#entries.delete(key);
    this.#entries.set(key, entry);
    return entry.page;
  }

  /** Keep a page read in `generation`; dropped if the memo was cleared since. */
  set(
    role: string | null,
    position: string,
    { page, generation }: { readonly page: TPage; readonly generation: number },
  ): void {
    if (
      !this.#on ||
      generation !== this.#generation ||
      this.#options.maxEntries === 0
    )
      return;
    const key = keyOf(role, position);
    this.#entries.delete(key);
    this.#entries.set(key, { page, storedAt: this.#now() });
    if (this.#entries.size > this.#options.maxEntries) {
      const oldest = this.#entries.keys().next();
      if (oldest.done !== true) this.#entries.delete(oldest.value);
    }
  }

  clear(): void {
    this.#generation += 1;
    this.#entries.clear();
  }

  #now(): number {
    return (this.#options.now ?? Date.now)();
  }
}

// The login (no request role) cannot collide with a role: role names never hold a NUL.
function keyOf(role: string | null, position: string): string {
  return `${role ?? '\u0000login'}\u0000${position}`;
}
