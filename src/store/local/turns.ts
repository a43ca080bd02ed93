/** A session's latest turn, as a store owned by one process keeps it (docs/turns.md). */
export interface TurnState {
  outputId: string;
  openedAt: number;
  /** Closes then unless done first; a done sets it to the time of the done. */
  until: number;
}

/** Expired turns looked at per new turn (their records go once nothing waits for them). */
const SWEEP_PER_OPEN = 2;

/**
 * The turns of the sessions, by session key, oldest opened first (a Map keeps insertion order,
 * and a new turn of a session moves its entry to the end): the sweep finds expired turns at the
 * front without a scan. A turn stays while its session's held buffer waits for it: the held
 * batches' release follows that turn up.
 */
export class TurnTable {
  private readonly turns = new Map<string, TurnState>();

  get(sessionKey: string): TurnState | undefined {
    return this.turns.get(sessionKey);
  }

  /** The session's open turn at `now`. */
  open(sessionKey: string, now: number): TurnState | undefined {
    const turn = this.turns.get(sessionKey);
    return turn && turn.until > now ? turn : undefined;
  }

  /** A new turn of the session (the one before it, if any, is replaced). */
  set(sessionKey: string, turn: TurnState): void {
    this.turns.delete(sessionKey);
    this.turns.set(sessionKey, turn);
  }

  delete(sessionKey: string): void {
    this.turns.delete(sessionKey);
  }

  /** Drop a few turns that closed with nothing held for them; returns their session keys. */
  sweep(now: number, holding: (sessionKey: string) => boolean): string[] {
    const dropped: string[] = [];
    for (const [sessionKey, turn] of this.turns) {
      if (dropped.length >= SWEEP_PER_OPEN || turn.until > now || holding(sessionKey)) break;
      this.turns.delete(sessionKey);
      dropped.push(sessionKey);
    }
    return dropped;
  }

  entries(): IterableIterator<[string, TurnState]> {
    return this.turns.entries();
  }

  /** Put back a turn recorded by an earlier run (SQLite open). */
  restore(sessionKey: string, turn: TurnState): void {
    this.turns.set(sessionKey, turn);
  }
}
