/** One scheduled wake-up: `key` is due at `at`, valid while its owner's stamp is still `stamp`. */
export interface Due {
  at: number;
  /** Store-wide increasing: breaks ties first-scheduled first, and marks entries stale. */
  stamp: number;
  key: string;
}

/**
 * A binary min-heap of due times with lazy deletion: rescheduling pushes a new entry with a
 * new stamp and the old one is skipped when it surfaces, so no entry is ever searched for.
 * The owner says which entries are live (`isLive`); stale ones are dropped at the top, and the
 * whole heap is rebuilt when they outnumber the live ones (bounded memory under churn).
 */
export class DueHeap {
  private items: Due[] = [];

  constructor(private readonly isLive: (due: Due) => boolean) {}

  get length(): number {
    return this.items.length;
  }

  push(due: Due): void {
    const items = this.items;
    items.push(due);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(due, items[parent] as Due)) break;
      items[i] = items[parent] as Due;
      i = parent;
    }
    items[i] = due;
  }

  /** The earliest live entry, dropping stale ones above it. */
  peek(): Due | undefined {
    for (let top = this.items[0]; top; top = this.items[0]) {
      if (this.isLive(top)) return top;
      this.pop();
    }
    return undefined;
  }

  pop(): Due | undefined {
    const items = this.items;
    const top = items[0];
    const last = items.pop();
    if (top === undefined || last === undefined || items.length === 0) return top;
    let i = 0;
    for (;;) {
      const left = i * 2 + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && before(items[right] as Due, items[left] as Due) ? right : left;
      if (!before(items[child] as Due, last)) break;
      items[i] = items[child] as Due;
      i = child;
    }
    items[i] = last;
    return top;
  }

  /** Drop stale entries when they are most of the heap; `live` is the owner's count of live ones. */
  compact(live: number): void {
    if (this.items.length < 1024 || this.items.length < live * 2) return;
    const kept = this.items.filter(this.isLive);
    this.items = [];
    for (const due of kept) this.push(due);
  }
}

function before(a: Due, b: Due): boolean {
  return a.at < b.at || (a.at === b.at && a.stamp < b.stamp);
}
