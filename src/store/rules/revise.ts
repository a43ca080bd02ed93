import type { TakeoverChange, TakeoverHold } from '../../core/ports/index.js';
import type { KeptMessage, Revision, Takeover } from '../../events/context.js';

/*
 * The rules of second thoughts (contract §13, `Conversations.revise` and the takeovers) that
 * every store keeps the same: the memory and SQLite stores call these, the Redis store's Lua
 * says the same.
 */

/** A session's revisions still live at `now`: recorded less than `ttlMs` ago. */
export function keptRevisions(list: readonly Revision[], now: number, ttlMs: number): Revision[] {
  return list.filter((revision) => revision.at + ttlMs > now);
}

/**
 * The kept context after a revision: a recall removes the entries of its message, an edit
 * rewrites their content. Undefined when no entry is of that message.
 */
export function revisedContext(entries: readonly KeptMessage[], revision: Revision): KeptMessage[] | undefined {
  if (!entries.some((entry) => entry.message.messageId === revision.messageId)) return undefined;
  if (revision.kind === 'recall') return entries.filter((entry) => entry.message.messageId !== revision.messageId);
  return entries.map((entry) =>
    entry.message.messageId === revision.messageId
      ? { ...entry, message: { ...entry.message, content: revision.content ?? '' } }
      : entry,
  );
}

/**
 * A human spoke at `at`: a live takeover (until after `now`) is extended, within `maxMs` of its
 * start and never shortened; otherwise one starts, ending one that ran out without its end.
 */
export function heldTakeover(
  current: Takeover | undefined,
  at: number,
  hold: TakeoverHold,
  now: number,
): TakeoverChange {
  if (current && current.until > now) {
    const until = Math.max(current.until, Math.min(at + hold.holdMs, current.since + hold.maxMs));
    return { started: false, takeover: { since: current.since, until } };
  }
  const started = { since: at, until: at + Math.min(hold.holdMs, hold.maxMs) };
  return current ? { started: true, takeover: started, ended: { ...current } } : { started: true, takeover: started };
}
