import { nanoid } from 'nanoid';
import type { DeliveryState } from '../core/ports/index.js';
import type { Party } from '../events/inbound.js';
import type { Trace, TraceEntry, TraceTrail, Verdict } from '../events/trace.js';

export type { Trace };

export interface TrailOptions {
  /** Entries kept (`trace.maxEntries`); the oldest are forgotten past it. @default 20000 */
  capacity?: number;
  /** Entries older than this are not read any more (`trace.retentionMs`). @default no limit */
  retentionMs?: number;
  /** The clock the entries' `at` come from (with `retentionMs`). */
  now?: () => number;
  /** This instance's name, on entries published without one. */
  instance?: string;
}

const KINDS: ReadonlyArray<TraceEntry['kind']> = ['verdict', 'batch', 'delivery', 'turn'];
const VERDICTS: ReadonlyArray<Verdict | undefined> = [
  undefined,
  'accepted',
  'duplicate',
  'fuzzy_duplicate',
  'correlated',
  'ignored',
  'looped',
  'rejected',
  'context',
  'denied',
  'over_budget',
  'retracted',
  'edited',
  'human_active',
];
const STATES: ReadonlyArray<DeliveryState | undefined> = [undefined, 'none', 'pending', 'delivered', 'dead'];
const VERDICT = 0;
const TURN = 3;
const codeOf = <T>(values: ReadonlyArray<T>, value: T): number => Math.max(0, values.indexOf(value));
const ACCEPTED = codeOf(VERDICTS, 'accepted');
const FUZZY_DUPLICATE = codeOf(VERDICTS, 'fuzzy_duplicate');

/**
 * The verdict trail: every admitted, duplicate, correlated, ignored, looped and rejected
 * event, every batch (which ids went into which output) and every push attempt, in one
 * bounded in-process ring. `/v1/trace/:id` reads it by id; `/v1/activity` tails it. It is the
 * trail of the memory and SQLite stores (one process is the whole deployment); on Redis the
 * trail is the store's (`src/trace/shared.ts`), and this ring only answers lookups over the
 * entries fetched from it (`Trail.of`).
 *
 * Publishing is on every message's path (two entries per message) and reading is an
 * operator's. So the ring is kept in columns, one slot per entry: numbers in typed arrays and
 * references to strings the message already has, with no object per entry. An object per
 * entry lived as long as the ring remembers it, and was about a fifth of what every message
 * left for the young-generation collector to copy (`bench/gc.mjs`). Entries are built when
 * read. A lookup scans the ring (a few milliseconds for 20,000 entries).
 */
export class Trail {
  private readonly capacity: number;
  private readonly retentionMs: number;
  private readonly now: () => number;
  private readonly instanceName: string | undefined;
  /** Slots in use; once full, `start` is the oldest. */
  private size = 0;
  private start = 0;
  private n = 0;
  private readonly ns: Float64Array;
  private readonly at: Float64Array;
  private readonly seq: Float64Array;
  private readonly attempts: Float64Array;
  /** kind | verdict << 2 | state << 6 */
  private readonly codes: Uint16Array;
  private readonly channel: string[];
  private readonly instance: Array<string | undefined>;
  private readonly bot: Array<string | undefined>;
  private readonly id: string[];
  private readonly platformId: Array<string | undefined>;
  private readonly sessionKey: Array<string | undefined>;
  private readonly sender: Array<Party | undefined>;
  private readonly preview: Array<string | undefined>;
  private readonly reason: Array<string | undefined>;
  private readonly messageIds: Array<string[] | undefined>;
  private readonly fuzzyKey: Array<string | undefined>;
  private readonly lastError: Array<string | undefined>;
  private readonly listeners = new Set<(entry: TraceEntry) => void>();
  /** Entries are numbered from 1 in each ring: names this one's numbering. */
  readonly life = nanoid(8);

  constructor(options: TrailOptions = {}) {
    const capacity = options.capacity ?? 20_000;
    this.capacity = capacity;
    this.retentionMs = options.retentionMs ?? Infinity;
    this.now = options.now ?? Date.now;
    this.instanceName = options.instance;
    this.ns = new Float64Array(capacity);
    this.at = new Float64Array(capacity);
    this.seq = new Float64Array(capacity);
    this.attempts = new Float64Array(capacity);
    this.codes = new Uint16Array(capacity);
    const column = <T>(): T[] => new Array<T>(capacity).fill(undefined as T);
    this.channel = column();
    this.instance = column();
    this.bot = column();
    this.id = column();
    this.platformId = column();
    this.sessionKey = column();
    this.sender = column();
    this.preview = column();
    this.reason = column();
    this.messageIds = column();
    this.fuzzyKey = column();
    this.lastError = column();
  }

  /** Sequence number of the newest entry (0: none yet). */
  get last(): number {
    return this.n;
  }

  /** A ring holding `entries` under their own sequence numbers (a lookup over entries fetched from a store). */
  static of(entries: readonly TraceEntry[]): Trail {
    const trail = new Trail({ capacity: Math.max(1, entries.length) });
    for (const entry of [...entries].sort((a, b) => a.n - b.n)) trail.put(entry, entry.n);
    return trail;
  }

  /** Record an entry; returns its sequence number. */
  publish(entry: Omit<TraceEntry, 'n'>): number {
    const n = ++this.n;
    const slot = this.put(entry, n);
    if (this.listeners.size > 0) {
      const built = this.entry(slot);
      for (const listener of this.listeners) listener(built);
    }
    return n;
  }

  private put(entry: Omit<TraceEntry, 'n'>, n: number): number {
    let slot: number;
    if (this.size < this.capacity) slot = this.size++;
    else {
      slot = this.start;
      this.start = (this.start + 1) % this.capacity;
    }
    this.n = Math.max(this.n, n);
    this.ns[slot] = n;
    this.at[slot] = entry.at;
    this.seq[slot] = entry.seq ?? NaN;
    this.attempts[slot] = entry.attempts ?? NaN;
    this.codes[slot] =
      codeOf(KINDS, entry.kind) | (codeOf(VERDICTS, entry.verdict) << 2) | (codeOf(STATES, entry.state) << 6);
    this.channel[slot] = entry.channel;
    this.instance[slot] = entry.instance ?? this.instanceName;
    this.bot[slot] = entry.bot;
    this.id[slot] = entry.id;
    this.platformId[slot] = entry.platformId;
    this.sessionKey[slot] = entry.sessionKey;
    this.sender[slot] = entry.sender;
    this.preview[slot] = entry.preview;
    this.reason[slot] = entry.reason;
    this.messageIds[slot] = entry.messageIds;
    this.fuzzyKey[slot] = entry.fuzzyKey;
    this.lastError[slot] = entry.lastError;
    return slot;
  }

  /** Slots oldest first, past those older than `trace.retentionMs`. */
  private kept(): number[] {
    const since = this.now() - this.retentionMs;
    const slots: number[] = [];
    for (let i = 0; i < this.size; i++) {
      const slot = (this.start + i) % this.size;
      if ((this.at[slot] as number) >= since) slots.push(slot);
    }
    return slots;
  }

  /** Entries after sequence `n`, oldest first (those still kept). */
  after(n: number, limit: number): TraceEntry[] {
    const out: TraceEntry[] = [];
    for (const slot of this.kept()) {
      if (out.length >= limit) break;
      if ((this.ns[slot] as number) > n) out.push(this.entry(slot));
    }
    return out;
  }

  /** Everything kept about an id: platform id, ingest-answer id or output id. */
  lookup(wanted: string): Trace {
    const slots = this.kept();
    // An ingest-answer id names its event's verdicts; the batch lists the platform id.
    const aliases = new Set([wanted]);
    for (const slot of slots) {
      const platformId = this.platformId[slot];
      if (platformId !== undefined && this.kindOf(slot) === VERDICT && this.id[slot] === wanted)
        aliases.add(platformId);
    }
    // A correlated copy names the delivery it joined: its trace follows that one into its output.
    for (const slot of slots) {
      if (
        this.kindOf(slot) !== VERDICT ||
        !this.messageIds[slot] ||
        ![...aliases].some((alias) => this.names(slot, alias))
      )
        continue;
      for (const joined of this.messageIds[slot] ?? []) aliases.add(joined);
    }
    // A fuzzy duplicate repeats the message that took its key: its trace follows that one too.
    const repeats = new Map<number, number>();
    for (const slot of slots) {
      if (this.verdictOf(slot) !== FUZZY_DUPLICATE || ![...aliases].some((alias) => this.names(slot, alias))) continue;
      const original = this.repeated(slot, slots);
      if (original === undefined) continue;
      repeats.set(slot, original);
      aliases.add(this.id[original] as string);
      if (this.platformId[original] !== undefined) aliases.add(this.platformId[original]);
    }
    const names = [...aliases];
    const found = new Set(slots.filter((slot) => names.some((alias) => this.names(slot, alias))));
    const outputs = new Set<string>();
    // A turn entry names the turn a message waited for, not an output it went into.
    for (const slot of found)
      if (this.kindOf(slot) !== VERDICT && this.kindOf(slot) !== TURN) outputs.add(this.id[slot] as string);
    // The outputs' own delivery attempts, and the verdicts of what went into them.
    for (const output of outputs) {
      for (const slot of slots) {
        if (this.kindOf(slot) === VERDICT || this.id[slot] !== output) continue;
        found.add(slot);
        for (const merged of this.messageIds[slot] ?? []) {
          for (const arrival of slots)
            if (this.kindOf(arrival) === VERDICT && this.names(arrival, merged)) found.add(arrival);
        }
      }
    }
    const entries = [...found]
      .sort((a, b) => (this.ns[a] as number) - (this.ns[b] as number))
      .map((slot) => {
        const entry = this.entry(slot);
        const original = repeats.get(slot);
        // Named as the output names its parts: by platform id, else by ingest id.
        if (original !== undefined) entry.messageIds = [this.platformId[original] ?? (this.id[original] as string)];
        return entry;
      });
    return { entries, outputs: [...outputs] };
  }

  subscribe(listener: (entry: TraceEntry) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** The message a fuzzy duplicate repeats (see `repeatedOf`), among the slots kept. */
  private repeated(duplicate: number, slots: readonly number[]): number | undefined {
    const key = this.fuzzyKey[duplicate];
    if (key === undefined) return undefined;
    const taken = slots.filter(
      (slot) => this.kindOf(slot) === VERDICT && this.verdictOf(slot) === ACCEPTED && this.fuzzyKey[slot] === key,
    );
    return repeatedOf(this.ns[duplicate] as number, taken, (slot) => this.ns[slot] as number);
  }

  private kindOf(slot: number): number {
    return (this.codes[slot] as number) & 3;
  }

  private verdictOf(slot: number): number {
    return ((this.codes[slot] as number) >> 2) & 15;
  }

  private names(slot: number, wanted: string): boolean {
    return (
      this.id[slot] === wanted || this.platformId[slot] === wanted || (this.messageIds[slot]?.includes(wanted) ?? false)
    );
  }

  /** The entry of a slot, with only the fields it has (as it was published). */
  private entry(slot: number): TraceEntry {
    const code = this.codes[slot] as number;
    const entry: TraceEntry = {
      n: this.ns[slot] as number,
      at: this.at[slot] as number,
      ...(this.instance[slot] === undefined ? {} : { instance: this.instance[slot] }),
      channel: this.channel[slot] as string,
      kind: KINDS[code & 3] as TraceEntry['kind'],
      id: this.id[slot] as string,
    };
    const optional = {
      platformId: this.platformId[slot],
      bot: this.bot[slot],
      sessionKey: this.sessionKey[slot],
      sender: this.sender[slot],
      preview: this.preview[slot],
      verdict: VERDICTS[(code >> 2) & 15],
      reason: this.reason[slot],
      messageIds: this.messageIds[slot],
      fuzzyKey: this.fuzzyKey[slot],
      seq: Number.isNaN(this.seq[slot]) ? undefined : this.seq[slot],
      state: STATES[code >> 6],
      attempts: Number.isNaN(this.attempts[slot]) ? undefined : this.attempts[slot],
      lastError: this.lastError[slot],
    };
    for (const [key, value] of Object.entries(optional))
      if (value !== undefined) (entry as unknown as Record<string, unknown>)[key] = value;
    return entry;
  }
}

/**
 * The message a fuzzy duplicate numbered `n` repeats, among the messages accepted with its key
 * (oldest first): the last one before it (an earlier one of the same words was outside the
 * window, or it would have been the duplicate's), else the first after it, whose entry another
 * instance wrote late.
 */
function repeatedOf<T>(n: number, taken: readonly T[], nOf: (candidate: T) => number): T | undefined {
  let before: T | undefined;
  for (const candidate of taken) {
    if (nOf(candidate) >= n) return before ?? candidate;
    before = candidate;
  }
  return before;
}

/** The message a fuzzy duplicate's entry repeats, among entries a shared trail found by its key. */
export function repeatedBy(duplicate: TraceEntry, entries: readonly TraceEntry[]): TraceEntry | undefined {
  if (duplicate.fuzzyKey === undefined) return undefined;
  const taken = entries
    .filter(
      (entry) => entry.kind === 'verdict' && entry.verdict === 'accepted' && entry.fuzzyKey === duplicate.fuzzyKey,
    )
    .sort((a, b) => a.n - b.n);
  return repeatedOf(duplicate.n, taken, (entry) => entry.n);
}

/** The ring as the service reads it (`TraceTrail`): this process is the whole deployment. */
export function inProcessTrail(trail: Trail): TraceTrail {
  return {
    shared: false,
    life: trail.life,
    publish: (entry) => void trail.publish(entry),
    last: async () => trail.last,
    after: async (n, limit) => trail.after(n, limit),
    lookup: async (id) => trail.lookup(id),
    subscribe: (listener) => trail.subscribe(listener),
  };
}
