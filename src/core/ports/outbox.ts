import type { OutboxReader } from './outbox-reader.js';
import type { OutboxRecord } from './outbox-record.js';

/** The outbox: what streams read, plus lookup by id (HTTP, traces) and the retention trim. */
export interface Outbox extends OutboxReader {
  /** The record with this output id, if the outbox still holds it. */
  outboxGet(id: string): Promise<OutboxRecord | undefined>;
  /**
   * Drop records older than `olderThan` or beyond the newest `keepCount`, never one still
   * `pending` or `dead`, nor one with seq greater than `keepAfterSeq` (a stream has not read it)
   * or than a live `keepUnread` hold (at `now`, the caller's clock).
   */
  trimOutbox(olderThan: number, keepCount: number, keepAfterSeq: number, now?: number): Promise<number>;
}
