import type { ConnectionView } from '../events/connection.js';

/** How long a closed connection stays listed after it closed. */
export const KEEP_CLOSED_MS = 10 * 60_000;
/** Closed connections listed per channel at most: past it, the one closed longest ago goes. */
export const MAX_CLOSED_PER_CHANNEL = 100;

interface Entry {
  view: ConnectionView;
  /** How many times this bot and role connected. */
  opened: number;
}

/**
 * The connections this instance lists (`/v1/connections`, the console, and what it publishes to
 * the other instances every 2 s): the latest of each bot and role, open, being dialled or
 * closed. A closed one stays listed for `KEEP_CLOSED_MS`, at most `MAX_CLOSED_PER_CHANNEL` per
 * channel, so an operator sees a bot that dropped and its reconnect counts as one; bots that come
 * and go leave nothing behind for long (3,000 dropped bots made every publication 663 KB).
 */
export class Roster {
  private readonly latest = new Map<string, Entry>();
  /** Per channel, its closed connections' keys and when each closed, the first closed first. */
  private readonly closedOf = new Map<string, Map<string, number>>();

  constructor(private readonly now: () => number) {}

  /** Every connection listed, newest first. */
  list(): ConnectionView[] {
    this.expire();
    return [...this.latest.values()].map(({ view }) => ({ ...view })).sort((a, b) => b.connectedAt - a.connectedAt);
  }

  /** The connection listed under `key` (bot and role), and how many times it connected. */
  get(key: string): Readonly<Entry> | undefined {
    return this.latest.get(key);
  }

  /** List `view` under `key`: a connection opened or being dialled, which `opened` times before. */
  put(key: string, view: ConnectionView, opened: number): void {
    this.closedOf.get(view.channel)?.delete(key);
    this.latest.delete(key);
    this.latest.set(key, { view, opened });
  }

  /** The connection `view` under `key` closed: it stays listed, closed, for a while (not if a newer one replaced it). */
  close(key: string, view: ConnectionView): void {
    view.state = 'closed';
    if (this.latest.get(key)?.view !== view) return;
    let closed = this.closedOf.get(view.channel);
    if (!closed) this.closedOf.set(view.channel, (closed = new Map()));
    closed.set(key, this.now());
    if (closed.size > MAX_CLOSED_PER_CHANNEL) this.drop(closed, closed.keys().next().value as string);
  }

  /** Stop listing `key`. */
  forget(key: string): void {
    const entry = this.latest.get(key);
    if (entry) this.closedOf.get(entry.view.channel)?.delete(key);
    this.latest.delete(key);
  }

  /** Drop the connections closed longer than `KEEP_CLOSED_MS` ago: the first closed are the oldest. */
  private expire(): void {
    const before = this.now() - KEEP_CLOSED_MS;
    for (const closed of this.closedOf.values()) {
      for (const [key, at] of closed) {
        if (at > before) break;
        this.drop(closed, key);
      }
    }
  }

  private drop(closed: Map<string, number>, key: string): void {
    closed.delete(key);
    this.latest.delete(key);
  }
}
