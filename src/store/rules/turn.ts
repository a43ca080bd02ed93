import type { FlushReason, TurnLink, TurnMode } from '../../core/ports/index.js';
import type { CutPart } from './close.js';

/**
 * Agent turns (docs/turns.md): the store rules every backend runs, at commit. The Redis store
 * runs the same functions in Lua (turn.lua, beside this file, line for line); the store test
 * kit's turn cases run against every store, so the two cannot drift apart.
 */

/** What a commit does with a message batch of a session. */
export interface TurnStep {
  /** Held for the turn's end (joined to the session's held buffer). */
  hold: boolean;
  link?: TurnLink;
  /** The output opens the session's next turn. */
  opens: boolean;
}

/**
 * The step of a batch: `fromHeld` when it is the held buffer's own batch (released: the turn
 * closed, ran out or reached maxHeld), `heldWaiting` when the session has held messages, `open`
 * the output id of the session's open turn, `last` that of its latest turn (open or not).
 */
export function turnStep(
  mode: TurnMode,
  fromHeld: boolean,
  heldWaiting: boolean,
  open: string | undefined,
  last: string | undefined,
): TurnStep {
  if (fromHeld)
    return last === undefined
      ? { hold: false, opens: true }
      : { hold: false, link: { field: 'followsUp', id: last }, opens: true };
  // Held messages go first: a batch behind them waits with them, whatever the mode says now.
  if (heldWaiting) return { hold: true, opens: false };
  if (open === undefined) return { hold: false, opens: mode !== 'off' };
  if (mode === 'collect' || mode === 'followup') return { hold: true, opens: false };
  if (mode === 'steer') return { hold: false, link: { field: 'during', id: open }, opens: false };
  if (mode === 'interrupt') return { hold: false, link: { field: 'interrupts', id: open }, opens: true };
  return { hold: false, opens: false };
}

/**
 * When a held buffer is due: when its turn closes (`until`: maxMs after it opened, or when it
 * was done), or once it holds `maxHeld` messages (the turn then counts as closed).
 */
export function heldDeadline(
  parts: readonly CutPart[],
  maxHeld: number,
  until: number,
): { deadline: number; reason: FlushReason } {
  if (parts.length >= maxHeld)
    return { deadline: Math.min(until, (parts[maxHeld - 1] as CutPart).receivedAt), reason: 'max_held' };
  return { deadline: until, reason: 'turn' };
}

/** An output body (`{...}` JSON) with the turn link as its last field. */
export function withLink(body: string, link: TurnLink | undefined): string {
  if (!link) return body;
  return `${body.slice(0, body.lastIndexOf('}'))},${JSON.stringify(link.field)}:${JSON.stringify(link.id)}}`;
}
