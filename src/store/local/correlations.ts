import type { CorrelationRecord, Delivery } from '../../events/inbound.js';
import type { CorrelationStep } from '../../core/ports/index.js';

/** What the correlation step decided for one item. */
export type CorrelationDecision =
  /** Another delivery of a live group: `retry` when the same bot sent the same event again. */
  | { seen: true; retry: boolean; group: CorrelationRecord }
  /** A new logical event: `group` is written only once the item's claims succeed. */
  | { seen: false; group: CorrelationRecord };

/**
 * Live cross-adapter correlation groups of a store owned by one process (memory, SQLite).
 * The correlation rules (same bot and id: a retry; another bot: a copy); the groups are store state so a
 * restart (SQLite) keeps them. Groups live in one FIFO per window length: a group's window is
 * fixed from its creation, so within one window creation order is expiry order, expiry pops
 * from the head, and eviction past the cap drops the oldest head of all windows.
 */
export class CorrelationGroups {
  private readonly byKey = new Map<string, CorrelationRecord>();
  private readonly windows = new Map<number, Fifo>();
  evicted = 0;

  constructor(private readonly maxGroups: number) {}

  /** The live group of `key` at `now`. */
  get(key: string, now: number): CorrelationRecord | undefined {
    const group = this.byKey.get(key);
    return group && group.expiresAt > now ? group : undefined;
  }

  /** Decide one step without changing anything. */
  decide(step: CorrelationStep, now: number): CorrelationDecision {
    let group = this.get(step.key, now);
    // Notices from two implementations may be stamped a little apart; farther is a new event.
    if (group && step.kind !== 'message' && Math.abs(group.time - step.time) > step.toleranceS) group = undefined;
    if (group) {
      const { delivery } = step;
      const same = group.deliveries.find((d) => d.channel === delivery.channel && d.botId === delivery.botId);
      const retry =
        same !== undefined &&
        (step.kind !== 'message' || (same.platformId !== undefined && same.platformId === delivery.platformId));
      // The same bot with another message id: the user really sent it again (a new group).
      if (!same || retry) return { seen: true, retry, group };
    }
    const fresh: CorrelationRecord = {
      key: step.key,
      kind: step.kind,
      firstAt: now,
      expiresAt: now + step.windowMs,
      time: step.time,
      deliveries: [step.delivery],
    };
    return { seen: false, group: fresh };
  }

  /** Add another bot's delivery to a live group. */
  append(group: CorrelationRecord, delivery: Delivery): void {
    group.deliveries.push(delivery);
  }

  /** Make `group` the live group of its key; returns the groups evicted past the cap. */
  add(group: CorrelationRecord, now: number): CorrelationRecord[] {
    this.expire(now);
    this.byKey.set(group.key, group);
    const windowMs = group.expiresAt - group.firstAt;
    let fifo = this.windows.get(windowMs);
    if (!fifo) this.windows.set(windowMs, (fifo = new Fifo()));
    fifo.push(group);
    const evicted: CorrelationRecord[] = [];
    while (this.byKey.size > this.maxGroups) {
      const oldest = this.oldest();
      if (!oldest) break;
      this.byKey.delete(oldest.key);
      evicted.push(oldest);
      this.evicted++;
    }
    return evicted;
  }

  /** Live groups at `now`. */
  count(now: number): number {
    this.expire(now);
    return this.byKey.size;
  }

  private expire(now: number): void {
    for (const fifo of this.windows.values()) {
      for (let group = this.head(fifo); group && group.expiresAt <= now; group = this.head(fifo)) {
        this.byKey.delete(group.key);
        fifo.shift();
      }
    }
  }

  private oldest(): CorrelationRecord | undefined {
    let oldest: CorrelationRecord | undefined;
    for (const fifo of this.windows.values()) {
      const group = this.head(fifo);
      if (group && (!oldest || group.firstAt < oldest.firstAt)) oldest = group;
    }
    return oldest;
  }

  /** Head of a FIFO, skipping groups no longer live (replaced by a newer group of their key). */
  private head(fifo: Fifo): CorrelationRecord | undefined {
    for (let group = fifo.peek(); group; group = fifo.peek()) {
      if (this.byKey.get(group.key) === group) return group;
      fifo.shift();
    }
    return undefined;
  }
}

/**
 * A queue over an array with a moving head. Not a Map: deleting from the head of a V8 Map
 * leaves holes that every later head lookup walks over.
 */
class Fifo {
  private items: CorrelationRecord[] = [];
  private start = 0;

  push(group: CorrelationRecord): void {
    this.items.push(group);
  }

  peek(): CorrelationRecord | undefined {
    return this.items[this.start];
  }

  shift(): void {
    this.start++;
    // Compact once the consumed prefix is half the array: amortized O(1) per group.
    if (this.start > 1024 && this.start * 2 > this.items.length) {
      this.items = this.items.slice(this.start);
      this.start = 0;
    }
  }
}

/** A deep copy for callers: the store's own groups must not change under them, nor theirs under it. */
export function copyGroup(group: CorrelationRecord): CorrelationRecord {
  return { ...group, deliveries: group.deliveries.map((d) => ({ ...d, ids: { ...d.ids } })) };
}
