import type { TurnDone, TurnView } from '../../events/turn.js';

/**
 * Agent turns (docs/turns.md): close a session's turn by its output id, and read the open ones.
 * Turn state and held batches live in the store, so every instance sees the same.
 */
export interface Turns {
  /**
   * Close the turn `outputId` opened: its held buffer is due now. `unknown` when no output has
   * that id; `already` when it opened no turn still open (closed, expired, or never a turn).
   */
  turnDone(outputId: string, now: number): Promise<TurnDone>;
  /** A session's turn: the open one, if any, and how many messages are held. */
  turnOf(sessionKey: string, now: number): Promise<TurnView>;
  /** Open turns (and sessions with held messages), up to `limit`, with their held counts. */
  openTurns(now: number, limit: number): Promise<TurnView[]>;
  /** How many turns are open at `now`: a count, however many there are. */
  openTurnCount(now: number): Promise<number>;
}
