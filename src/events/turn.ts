/**
 * Agent turns (CONTRACT §10): the shapes a session's turn takes, shared by the output stage,
 * the store and the HTTP surface.
 */

/** What a session's turn does with batches that close while it is open. */
export type TurnMode = 'off' | 'collect' | 'followup' | 'steer' | 'interrupt';

/** `turns` of a channel: the mode, how long a turn may stay open, how many messages it may hold. */
export interface TurnRule {
  mode: TurnMode;
  maxMs: number;
  maxHeld: number;
}

/** How an output stands to the session's turn; absent when it opened a turn with nothing before it. */
export interface TurnLink {
  field: 'followsUp' | 'during' | 'interrupts';
  /** The output id of the turn it follows, was emitted during, or interrupted. */
  id: string;
}

export type TurnDone =
  | { result: 'closed' | 'already'; sessionKey: string; held: number }
  | { result: 'unknown' };

/** A session's turn as `/v1/sessions/<key>/turn` shows it. */
export interface TurnView {
  sessionKey: string;
  open: boolean;
  outputId?: string;
  openedAt?: number;
  /** When it closes unless done first (maxMs after it opened). */
  until?: number;
  /** Messages held for the turn's end. */
  held: number;
}

/** The buffer a session's held batches wait in (no debounce key starts with `~`: a namespace cannot). */
export function turnBufferKey(sessionKey: string): string {
  return `~turn:${sessionKey}`;
}

/** Whether a debounce key is a session's held buffer. */
export function isTurnBuffer(debounceKey: string): boolean {
  return debounceKey.startsWith('~turn:');
}

/**
 * The store's turns role (ports.ts lists it with the others): close a session's turn by its
 * output id, and read the open ones.
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
