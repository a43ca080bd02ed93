import type { DeliveryState } from './output.js';
import type { Party } from './inbound.js';

/** What happened to one delivered event, or to one batch: the verdict trail (`/v1/trace`, `/v1/activity`). */
export type Verdict =
  | 'accepted'
  | 'duplicate'
  | 'fuzzy_duplicate'
  | 'correlated'
  | 'ignored'
  | 'looped'
  | 'rejected'
  /** Kept as its conversation's context (not addressed, over a `drop` budget), or carried as context by an output. */
  | 'context'
  /** Refused by `access` (a denied sender or conversation). */
  | 'denied'
  | 'over_budget'
  /** Second thoughts (contract §13): a message taken back or rewritten where it was; a batch held back while a human answers. */
  | 'retracted'
  | 'edited'
  | 'human_active';

export interface TraceEntry {
  /** Sequence of the trail (resume point of `/v1/activity`): this process's, or the store's on Redis. */
  n: number;
  at: number;
  /** The instance that recorded it (`/v1/connections` names instances alike). */
  instance?: string;
  channel: string;
  kind: 'verdict' | 'batch' | 'delivery' | 'turn';
  /** verdict: the event's ingest-answer id; batch and delivery: the output id; turn: the turn's (held, done) or the release's output id. */
  id: string;
  platformId?: string;
  /** verdict: the bot that delivered the event, when the platform names it. */
  bot?: string;
  sessionKey?: string;
  sender?: Party;
  /** First characters of the text, for a feed. */
  preview?: string;
  verdict?: Verdict;
  /** Why: the duplicated id, the correlated bot, the error code and message. */
  reason?: string;
  /**
   * batch: the ids merged into `id`, and its seq; a correlated verdict: the platform id of the
   * delivery it joined; a fuzzy duplicate, as a trace answers it: the id of the message it repeats.
   */
  messageIds?: string[];
  /**
   * verdict: the key of its sender and content in the fuzzy window (`dedup.fuzzy`), on the
   * message that took it and on a fuzzy duplicate, whose trace finds by it the message it repeats.
   */
  fuzzyKey?: string;
  seq?: number;
  /** delivery: state after an attempt, with attempts and the last error. */
  state?: DeliveryState;
  attempts?: number;
  lastError?: string;
}

/** What the trail knows of one id. */
export interface Trace {
  /** Entries naming the id: its arrivals and verdicts, batches it went into, delivery attempts. */
  entries: TraceEntry[];
  /** Output ids the id went into (or the id itself, when it is one). */
  outputs: string[];
}

/**
 * The verdict trail as the service reads and writes it: this process's ring (memory and SQLite
 * stores: one process is the whole deployment), or the store's, shared by every instance (Redis).
 */
export interface TraceTrail {
  /** True when the trail is the store's, every instance's (Redis); false for this process's ring. */
  readonly shared: boolean;
  /**
   * Names this trail's numbering when it starts again from 1 (this process's ring: each process
   * is a life of its own, as `/v1/activity` ids say); absent when its numbers are never reused.
   */
  readonly life?: string;
  /** Record an entry; never waits for a store (a shared trail writes it in the background). */
  publish(entry: Omit<TraceEntry, 'n'>): void;
  /** Sequence number of the newest entry (0: none yet). */
  last(): Promise<number>;
  /** Entries after sequence `n`, oldest first (those still kept). */
  after(n: number, limit: number): Promise<TraceEntry[]>;
  /** Everything kept about an id: platform id, ingest-answer id or output id. */
  lookup(id: string): Promise<Trace>;
  /** Every entry from now on (from every instance, on a shared trail). Returns the unsubscribe. */
  subscribe(listener: (entry: TraceEntry) => void): () => void;
}

/**
 * The verdict trail kept in the store, for every instance on it (Redis): each instance writes
 * its entries, and any instance reads every instance's. Bounded by `trace.retentionMs` and
 * `trace.maxEntries`. Memory and SQLite have none: one process is the whole deployment, and
 * its in-process ring is the trail (src/trace/trail.ts).
 */
export interface TrailLog {
  /** Record an entry in the background: never waits for the store, and a failed write is logged, not retried. */
  publish(entry: Omit<TraceEntry, 'n'>): void;
  /** Sequence number of the newest entry, any instance's (0: none). */
  last(): Promise<number>;
  /** Entries after sequence `n`, oldest first. */
  after(n: number, limit: number): Promise<TraceEntry[]>;
  /** Entries naming any of `names` as their id, platform id or one of their `messageIds`. */
  naming(names: readonly string[]): Promise<TraceEntry[]>;
  /** Every entry from now on, any instance's. Returns the unsubscribe. */
  subscribe(listener: (entry: TraceEntry) => void): () => void;
}

export interface TrailLogOptions {
  /** This instance's name, on each entry it writes. */
  instance: string;
  retentionMs: number;
  maxEntries: number;
}
