import type { AdmissionStore, AdmitItem, AdmitVerdict } from '../core/ports/index.js';

/** At most this many items in one store step: a Redis script call's arguments stay bounded. */
const MAX_ITEMS_PER_STEP = 512;

interface Waiting {
  items: readonly AdmitItem[];
  now: number;
  resolve(verdicts: AdmitVerdict[]): void;
  reject(error: unknown): void;
}

/**
 * Admission in batches: the deliveries that reach admission in one turn of the event loop (the
 * frames of one socket read, webhooks read together, a polled page) go to the store in ONE
 * `admit` call: one write in the SQLite group commit, one script call on Redis. The store takes
 * the items in order, so the verdicts are those of the deliveries admitted one after the other
 * in arrival order (the same message id twice: the first admitted, the second a duplicate).
 * Each delivery resolves with its own verdicts once the step is durable; a step that fails
 * fails every delivery in it, and only those (each answers 503, nothing of it recorded).
 * Deliveries stamped with different times are stepped apart: a claim's expiry and a buffer's
 * deadline are counted from the delivery's own `now`.
 */
export class AdmissionBatches implements Pick<AdmissionStore, 'admit'> {
  private waiting: Waiting[] = [];
  private items = 0;
  private scheduled = false;

  constructor(private readonly store: Pick<AdmissionStore, 'admit'>) {}

  admit(items: readonly AdmitItem[], now: number): Promise<AdmitVerdict[]> {
    if (items.length === 0) return Promise.resolve([]);
    return new Promise<AdmitVerdict[]>((resolve, reject) => {
      this.waiting.push({ items, now, resolve, reject });
      this.items += items.length;
      if (this.items >= MAX_ITEMS_PER_STEP) this.send();
      else if (!this.scheduled) {
        this.scheduled = true;
        // The check phase: every delivery whose I/O callback ran in this turn is waiting by now.
        setImmediate(() => {
          this.scheduled = false;
          this.send();
        });
      }
    });
  }

  private send(): void {
    const waiting = this.waiting;
    this.waiting = [];
    this.items = 0;
    let from = 0;
    for (let i = 1; i <= waiting.length; i++) {
      if (i < waiting.length && (waiting[i] as Waiting).now === (waiting[from] as Waiting).now) continue;
      this.step(waiting.slice(from, i));
      from = i;
    }
  }

  /** One store step for deliveries of the same `now`, each answered with its slice of the verdicts. */
  private step(group: Waiting[]): void {
    const [first] = group as [Waiting];
    const items = group.length === 1 ? first.items : group.flatMap((delivery) => delivery.items);
    let call: Promise<AdmitVerdict[]>;
    try {
      call = this.store.admit(items, first.now);
    } catch (error) {
      call = Promise.reject(error);
    }
    call.then(
      (verdicts) => {
        let at = 0;
        for (const delivery of group) {
          const end = at + delivery.items.length;
          delivery.resolve(group.length === 1 ? verdicts : verdicts.slice(at, end));
          at = end;
        }
      },
      (error: unknown) => {
        for (const delivery of group) delivery.reject(error);
      },
    );
  }
}
