import type { TraceEntry } from '../events.js';

export interface TrailOptions {
  /** Entries kept; the oldest are forgotten past it. @default 20000 */
  capacity?: number;
}

/** What the trail knows of one id. */
export interface Trace {
  /** Entries naming the id: its arrivals and verdicts, batches it went into, delivery attempts. */
  entries: TraceEntry[];
  /** Output ids the id went into (or the id itself, when it is one). */
  outputs: string[];
}

/**
 * The verdict trail: every admitted, duplicate, correlated, ignored, looped and rejected
 * event, every batch (which ids went into which output) and every push attempt, in one
 * bounded in-process ring. `/v1/trace/:id` reads it by id; `/v1/activity` tails it. It is this
 * instance's view (deliveries another instance answered are in that instance's trail).
 *
 * Publishing is on every message's path and lookups are an operator's: the ring keeps no
 * index, and a lookup scans it (a few milliseconds for 20,000 entries).
 */
export class Trail {
  private readonly capacity: number;
  private readonly ring: TraceEntry[] = [];
  private start = 0;
  private n = 0;
  private readonly listeners = new Set<(entry: TraceEntry) => void>();

  constructor(options: TrailOptions = {}) {
    this.capacity = options.capacity ?? 20_000;
  }

  /** Sequence number of the newest entry (0: none yet). */
  get last(): number {
    return this.n;
  }

  publish(partial: Omit<TraceEntry, 'n'>): TraceEntry {
    const entry = partial as TraceEntry;
    entry.n = ++this.n;
    if (this.ring.length < this.capacity) this.ring.push(entry);
    else {
      this.ring[this.start] = entry;
      this.start = (this.start + 1) % this.capacity;
    }
    for (const listener of this.listeners) listener(entry);
    return entry;
  }

  /** Entries after sequence `n`, oldest first (those still kept). */
  after(n: number, limit: number): TraceEntry[] {
    const out: TraceEntry[] = [];
    const size = this.ring.length;
    for (let i = 0; i < size && out.length < limit; i++) {
      const entry = this.ring[(this.start + i) % size] as TraceEntry;
      if (entry.n > n) out.push(entry);
    }
    return out;
  }

  /** Everything kept about an id: platform id, ingest-answer id or output id. */
  lookup(id: string): Trace {
    const kept = this.after(0, this.ring.length);
    const names = (entry: TraceEntry, wanted: string) => entry.id === wanted || entry.platformId === wanted || (entry.messageIds?.includes(wanted) ?? false);
    const found = new Set(kept.filter((entry) => names(entry, id)));
    const outputs = new Set<string>();
    for (const entry of found) if (entry.kind !== 'verdict') outputs.add(entry.id);
    // The outputs' own delivery attempts, and the verdicts of what went into them.
    for (const output of outputs) {
      for (const entry of kept) {
        if (entry.kind !== 'verdict' && entry.id === output) {
          found.add(entry);
          if (entry.kind === 'batch') {
            for (const merged of entry.messageIds ?? []) for (const arrival of kept) if (arrival.kind === 'verdict' && names(arrival, merged)) found.add(arrival);
          }
        }
      }
    }
    return { entries: [...found].sort((a, b) => a.n - b.n), outputs: [...outputs] };
  }

  subscribe(listener: (entry: TraceEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
