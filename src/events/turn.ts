/**
 * Agent turns (docs/turns.md): the shapes a session's turn takes, shared by the output stage,
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

export type TurnDone = { result: 'closed' | 'already'; sessionKey: string; held: number } | { result: 'unknown' };

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

/** A session's buffer of batches deferred by one budget (contract §12): merged until the budget allows. */
export function budgetBufferKey(sessionKey: string, budgetKey: string): string {
  return `~budget:${sessionKey}\u0000${budgetKey}`;
}

/** Whether a debounce key is a session's buffer of batches deferred by a budget. */
export function isBudgetBuffer(debounceKey: string): boolean {
  return debounceKey.startsWith('~budget:');
}
