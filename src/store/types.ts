import type { InboundEvent } from '../events.js';

/**
 * The store behind every stage: dedup claims, debounce buffers and the outbox. Every method
 * is atomic on its own; `admit` is atomic across all admissions of one delivery, which is
 * what lets a webhook be answered 200 only once everything it carried is recorded.
 */
export interface Store {
  /** `memory` or `sqlite`. */
  readonly kind: string;
  /** False when a restart loses everything (the memory store). */
  readonly durable: boolean;
  /** Record one delivery: for each admission claim its keys in order and, when all are new, append its part or outbox entry. */
  admit(admissions: readonly Admission[], now: number): Promise<AdmitResult[]>;
  /** Every buffered part not yet flushed, in arrival order (re-armed after a restart). */
  openParts(): Promise<BufferedPart[]>;
  /** Atomically remove a flushed batch's parts and append its processed message to the outbox. */
  flush(partIds: readonly string[], draft: OutboxDraft): Promise<OutboxRecord>;
  /** Outbox entries with seq greater than `seq`, oldest first. */
  outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]>;
  outboxGet(id: string): Promise<OutboxRecord | undefined>;
  /** Drop delivered (or never-pushed) entries older than `olderThan` or beyond the newest `keepCount`. */
  trimOutbox(olderThan: number, keepCount: number): Promise<number>;
  /** Entries waiting for push to the agent, oldest first. */
  pendingDeliveries(limit: number): Promise<OutboxRecord[]>;
  /** Entries whose push exhausted its retries, oldest first. */
  deadLetters(limit: number): Promise<OutboxRecord[]>;
  countByState(state: DeliveryState): Promise<number>;
  /** Record the outcome of a push attempt. */
  setDelivery(id: string, update: DeliveryUpdate): Promise<void>;
  /** Claim counts for stats: live keys and keys evicted by the cap. */
  claimStats(): { keys: number; evicted: number };
  /** Throws when the store cannot be used (readiness). */
  ping(): Promise<void>;
  close(): Promise<void>;
}

/** A dedup claim: `key` is taken for `ttlMs`; a second claim inside that time fails. */
export interface ClaimSpec {
  /** Already-hashed key, unique across spaces (see dedup/keys.ts). */
  key: string;
  /** Groups keys that share one TTL, so expiry is first-in first-out. */
  space: string;
  ttlMs: number;
  /** Cap on live keys in the space; the oldest are evicted (and counted) past it. */
  maxKeys: number;
}

export interface Admission {
  claims: readonly ClaimSpec[];
  part?: BufferedPart;
  emit?: OutboxDraft;
}

export interface AdmitResult {
  /** Index of the claim that was already taken, or -1 when the admission went through. */
  taken: number;
  /** The outbox record, when the admission carried `emit`. */
  record?: OutboxRecord;
}

/** One message waiting in a debounce buffer. */
export interface BufferedPart {
  /** A decimal integer that grows with arrival (`partId()`), unique per store. */
  id: string;
  debounceKey: string;
  receivedAt: number;
  /** The normalized event, without its `raw` payload. */
  event: InboundEvent;
}

export type OutputType = 'chat.processedMessage' | 'chat.notice' | 'chat.request';
export type DeliveryState = 'none' | 'pending' | 'delivered' | 'dead';

export interface OutboxDraft {
  id: string;
  type: OutputType;
  sessionKey: string;
  channel: string;
  createdAt: number;
  /** The output event as JSON, without `seq` (the store assigns it). */
  body: string;
  /** `pending` when it must be pushed to the agent, else `none`. */
  state: DeliveryState;
}

export interface OutboxRecord extends OutboxDraft {
  seq: number;
  attempts: number;
  lastError?: string;
  updatedAt: number;
}

export interface DeliveryUpdate {
  state: DeliveryState;
  attempts: number;
  lastError?: string;
  now: number;
}
