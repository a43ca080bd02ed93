import type { BufferedPart, CorrelationRecord } from '../../events/inbound.js';
import type { BufferRule, ClaimSpec, OutboxDraft, OutboxRecord } from '../../core/ports/index.js';
import type { OpenBuffer } from './buffers.js';
import type { BudgetRows } from './budgets.js';
import type { ConversationRows } from './conversations.js';
import type { TurnState } from './turns.js';

/**
 * Where a store owned by one process keeps its rows: plain maps (memory) or tables (SQLite).
 * LocalState calls a row method before it changes its own indexes wherever the row can be
 * refused (a duplicate outbox id), so a refused write leaves the indexes as they were.
 */
export interface Rows extends ConversationRows, BudgetRows {
  claimTaken(claim: ClaimSpec, now: number): void;
  groupSaved(group: CorrelationRecord): void;
  groupsDropped(groups: readonly CorrelationRecord[]): void;
  /** Store a part's body; returns its id (unique per store, growing). */
  partAdded(part: Omit<BufferedPart, 'id'>, unit: string | undefined, closes: boolean, rule: BufferRule): string;
  /** Bodies of parts restored from the rows (those admitted by this state carry their own). */
  partBodies(ids: readonly string[]): BufferedPart[];
  partsDeleted(ids: readonly string[]): void;
  bufferSaved(buffer: OpenBuffer): void;
  bufferDropped(debounceKey: string): void;
  /** Append to the outbox with the next seq; throws when the id is already there. Returns a record of the caller's own. */
  outboxAppended(draft: OutboxDraft, now: number): OutboxRecord;
  /**
   * A record to change (state, attempts, times; never its body): memory hands out its own
   * object, saved again by `recordSaved`; its `body` may not be the text (see `handOut`).
   */
  record(seq: number): OutboxRecord | undefined;
  /** A copy of a record from `record` or `deadRecords`, whole, for a caller outside the store. */
  handOut(record: OutboxRecord): OutboxRecord;
  recordSaved(record: OutboxRecord): void;
  /** Dead records, oldest first: the one with `id`, or up to `limit`. */
  deadRecords(id: string | undefined, limit: number): OutboxRecord[];
  /** The session of the outbox record `id` (undefined: no such record). */
  outputSession(id: string): string | undefined;
  /** Parts moved to a held buffer: its key, each part's `closes`, and maxHeld as the buffer's count. */
  partsHeld(ids: readonly string[], debounceKey: string, closes: readonly boolean[], maxHeld: number): void;
  /** A session's turn changed; `held` is the rule of its held buffer, when it has one. */
  turnSaved(
    sessionKey: string,
    turn: TurnState,
    held: { mode: string; maxMs: number; maxHeld: number } | undefined,
  ): void;
  turnDropped(sessionKey: string): void;
}
