/** Names past which, and past twice as many as its last read, a set is read again from the rows. */
const RELOAD_MIN = 1024;

/**
 * The sessions with a row in some tables, and maybe some without: a superset that lets a read
 * skip a session with none. Named before each write that adds such a row, so a write rolled
 * back leaves a name too many, never one too few. Names of sessions whose rows are gone (the
 * store's purge expires them) are dropped when the set is read again: at first use, and once
 * it doubled, so a read of the rows is paid for by as many names as it finds.
 */
export class NamedSessions {
  private names: Set<string> | undefined;
  private reloadAt = RELOAD_MIN;

  /** `read`: every session with a row, from the file (outside any write). */
  constructor(private readonly read: () => string[]) {}

  /** `sessionKey` is about to get a row. */
  add(sessionKey: string): void {
    const names = this.names;
    if (!names) return; // read again before it is used, with this write's rows if they commit
    names.add(sessionKey);
    if (names.size > this.reloadAt) this.names = undefined;
  }

  /** Whether `sessionKey` may have a row (false: it has none). */
  has(sessionKey: string): boolean {
    let names = this.names;
    if (!names) {
      names = this.names = new Set(this.read());
      this.reloadAt = Math.max(RELOAD_MIN, 2 * names.size);
    }
    return names.has(sessionKey);
  }
}
