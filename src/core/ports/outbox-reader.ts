import type { OutboxRecord } from './outbox-record.js';

/**
 * The outbox as a stream reads it: replay from a seq, then follow live
 * (src/http/event-stream.ts).
 */
export interface OutboxReader {
  /** Outbox records with seq greater than `seq`, oldest first. */
  outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]>;
  /** The highest seq ever assigned (0 when none): a resume point past it is from another store. */
  lastSeq(): Promise<number>;
  /**
   * The life of this outbox's seqs, carried in event stream ids so that a consumer's position
   * from before the store lost data is told from one in the seqs assigned since. A store that
   * cannot assign a seq twice may leave it out (its stream ids are plain seqs).
   */
  life?(): Promise<OutboxLife>;
  /**
   * Every record committed from now on, in seq order, from any instance. Returns the
   * unsubscribe function. Memory and SQLite call back synchronously inside `commit`; a shared
   * store may also tell `events` of what its followers cannot see by themselves.
   */
  tail(listener: (record: OutboxRecord) => void, events?: TailEvents): () => void;
  /** Keep the records after `afterSeq` from any instance's trim until `now + forMs` (a cut stream's; Redis only). */
  keepUnread?(afterSeq: number, forMs: number, now: number): Promise<void>;
}

/** What a shared store's tail tells beside records (Redis: another instance trims, the server may lose data). */
export interface TailEvents {
  /** Records after `after` and before `next` were trimmed before the tail read them (told before `next`). */
  gap?(after: number, next: number): void;
  /** The store was reset (its seq went back from `from` to `to`): records told from now on reuse seqs. */
  reset?(rollback: { from: number; to: number }): void;
}

/**
 * The life of an outbox's seqs: the span over which a seq names one record. A store that lost
 * data and assigns seqs again that it had assigned before (a Redis failover to a replica that
 * lagged, a `FLUSHALL`, an in-memory store restarted) begins a new life; a consumer's position
 * from an earlier life is then no position in this one (src/http/resume.ts).
 */
export interface OutboxLife {
  /** Names this life (letters, digits, `_`, `-`): another value is another life. */
  tag: string;
  /**
   * Records with a greater seq were committed in this life; those up to it may be of an earlier
   * one (0: every record is this life's).
   */
  since: number;
}
