import type { BufferedPart, CorrelationRecord, Delivery, EventKind } from '../../events/inbound.js';

/**
 * Admission: what one webhook delivery records, in one atomic step, and the correlation group
 * a later notice looks up.
 */
export interface AdmissionStore {
  /**
   * Record one webhook delivery, all its events in one atomic step: for each item, in order,
   * correlation (when `correlation` is set), then its claims, then (when everything is new)
   * append `part` to the buffer `part.debounceKey` and compute that buffer's deadline. Items
   * refused by correlation or a claim change nothing. Resolves only once durable. The items may
   * be those of several deliveries (one event-loop turn's, in arrival order).
   */
  admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]>;
  /** The live correlation group of a key (the notice participants after a hold), if any. */
  correlation(key: string, now: number): Promise<CorrelationRecord | undefined>;
}

/** A dedup claim: `key` is taken for `ttlMs`; a second claim inside that time fails. */
export interface ClaimSpec {
  /** Already-hashed key, unique across spaces (see dedup/claims.ts). */
  key: string;
  /** Groups keys that share one TTL, so expiry is first-in first-out. */
  space: string;
  ttlMs: number;
  /** Cap on live keys in the space; the oldest are evicted (and counted) past it. */
  maxKeys: number;
}

/** How a buffer closes: the debounce options of the part's channel, resolved by the caller. */
export interface BufferRule {
  windowMs: number;
  maxWaitMs: number;
  maxMessages: number;
}

/** The correlation step of one event (only in namespaces where several bots deliver: several channels, or one that carries several bots). */
export interface CorrelationStep {
  key: string;
  kind: EventKind;
  /** The group lives this long from its first delivery. */
  windowMs: number;
  /** Platform time of the event, seconds; notices farther apart than `toleranceS` are new events. */
  time: number;
  toleranceS: number;
  /** This delivery: same channel+bot with the same platform id (or any notice) is a retry. */
  delivery: Delivery;
}

export interface AdmitItem {
  correlation?: CorrelationStep;
  /** Claimed in order; the index of a taken one is returned. */
  claims: readonly ClaimSpec[];
  /** The part to buffer; the store assigns `part.id` (unique per store, growing). */
  part: Omit<BufferedPart, 'id'>;
  rule: BufferRule;
  /** Counts once toward `maxMessages` per distinct value (an album); default: the part itself. */
  unit?: string;
  /** Close the buffer now, with this part last (a command). */
  closeNow: boolean;
}

export type AdmitVerdict =
  | { verdict: 'accepted'; partId: string; deadline: number; correlation?: CorrelationRecord }
  /** A claim was taken: `claim` is its index in `AdmitItem.claims`. */
  | { verdict: 'claimed'; claim: number }
  /** Correlation: `retry` when the same bot delivered it again, else another bot's copy. */
  | { verdict: 'correlated'; retry: boolean; correlation: CorrelationRecord };
