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
 * bounded in-process log. `/v1/trace/:id` reads it by id; `/v1/activity` tails it. It is this
 * instance's view (deliveries another instance answered are in that instance's trail).
 */
export class Trail {
  private readonly capacity: number;
  private readonly ring: TraceEntry[] = [];
  private start = 0;
  private n = 0;
  private readonly byId = new Map<string, TraceEntry[]>();
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
      this.forget(this.ring[this.start] as TraceEntry);
      this.ring[this.start] = entry;
      this.start = (this.start + 1) % this.capacity;
    }
    this.index(entry.id, entry);
    if (entry.platformId !== undefined && entry.platformId !== entry.id) this.index(entry.platformId, entry);
    if (entry.messageIds) for (const id of entry.messageIds) this.index(id, entry);
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
    const entries = [...(this.byId.get(id) ?? [])];
    const outputs = new Set<string>();
    for (const entry of entries) if (entry.kind !== 'verdict') outputs.add(entry.id);
    // The outputs' own delivery attempts, and the verdicts of what went into them.
    const seen = new Set(entries);
    const add = (entry: TraceEntry) => {
      if (seen.has(entry)) return;
      seen.add(entry);
      entries.push(entry);
    };
    for (const output of outputs) {
      for (const entry of this.byId.get(output) ?? []) {
        add(entry);
        if (entry.kind === 'batch') for (const id of entry.messageIds ?? []) for (const arrival of this.byId.get(id) ?? []) if (arrival.kind === 'verdict') add(arrival);
      }
    }
    entries.sort((a, b) => a.n - b.n);
    return { entries, outputs: [...outputs] };
  }

  subscribe(listener: (entry: TraceEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private index(id: string, entry: TraceEntry): void {
    const list = this.byId.get(id);
    if (list) list.push(entry);
    else this.byId.set(id, [entry]);
  }

  private forget(entry: TraceEntry): void {
    for (const id of new Set([entry.id, entry.platformId, ...(entry.messageIds ?? [])])) {
      if (id === undefined) continue;
      const list = this.byId.get(id);
      if (!list) continue;
      // Entries leave oldest first, so this one is at the head of every list it is in.
      if (list[0] === entry) list.shift();
      else list.splice(list.indexOf(entry), 1);
      if (list.length === 0) this.byId.delete(id);
    }
  }
}
