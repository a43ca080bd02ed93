import { ClaimTables } from './claim-table.js';
import type {
  Admission, AdmitResult, BufferedPart, DeliveryState, DeliveryUpdate, OutboxDraft, OutboxRecord, Store,
} from './types.js';

/**
 * Volatile store: everything lives in this process and is gone on restart. Fast, and the
 * right choice for tests and throwaway setups; the service warns when it starts on it.
 */
export class MemoryStore implements Store {
  readonly kind = 'memory';
  readonly durable = false;
  private readonly claims = new ClaimTables();
  private readonly parts = new Map<string, BufferedPart>();
  /** Outbox in seq order; `byId` indexes the same records. */
  private outbox: OutboxRecord[] = [];
  private readonly byId = new Map<string, OutboxRecord>();
  private seq = 0;
  private closed = false;

  async admit(admissions: readonly Admission[], now: number): Promise<AdmitResult[]> {
    this.assertOpen();
    const results: AdmitResult[] = [];
    for (const admission of admissions) {
      const taken = this.claims.claimAll(admission.claims, now);
      if (taken !== -1) {
        results.push({ taken });
        continue;
      }
      if (admission.part) this.parts.set(admission.part.id, admission.part);
      results.push(admission.emit ? { taken, record: this.append(admission.emit) } : { taken });
    }
    return results;
  }

  private append(draft: OutboxDraft): OutboxRecord {
    // The draft is the caller's fresh object: complete it in place rather than copy it.
    const record = draft as OutboxRecord;
    record.seq = ++this.seq;
    record.attempts = 0;
    record.updatedAt = draft.createdAt;
    this.outbox.push(record);
    this.byId.set(record.id, record);
    return record;
  }

  async openParts(): Promise<BufferedPart[]> {
    this.assertOpen();
    return [...this.parts.values()];
  }

  async flush(partIds: readonly string[], draft: OutboxDraft): Promise<OutboxRecord> {
    this.assertOpen();
    for (const id of partIds) this.parts.delete(id);
    return this.append(draft);
  }

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    this.assertOpen();
    let low = 0;
    let high = this.outbox.length;
    while (low < high) {
      const mid = (low + high) >>> 1;
      if ((this.outbox[mid] as OutboxRecord).seq <= seq) low = mid + 1;
      else high = mid;
    }
    return this.outbox.slice(low, low + limit).map((record) => ({ ...record }));
  }

  async outboxGet(id: string): Promise<OutboxRecord | undefined> {
    this.assertOpen();
    const record = this.byId.get(id);
    return record && { ...record };
  }

  async trimOutbox(olderThan: number, keepCount: number): Promise<number> {
    // Records are in seq (= creation) order: drop from the front while over the count or too
    // old, stepping over what still waits for delivery; compact the array only then.
    let kept: OutboxRecord[] | undefined;
    let removed = 0;
    let i = 0;
    for (; i < this.outbox.length; i++) {
      const record = this.outbox[i] as OutboxRecord;
      const over = this.outbox.length - i + (kept?.length ?? 0) > keepCount;
      if (!over && record.createdAt >= olderThan) break;
      if (record.state === 'pending' || record.state === 'dead') (kept ??= []).push(record);
      else {
        this.byId.delete(record.id);
        removed++;
      }
    }
    if (i > 0) this.outbox = kept ? [...kept, ...this.outbox.slice(i)] : this.outbox.slice(i);
    return removed;
  }

  async pendingDeliveries(limit: number): Promise<OutboxRecord[]> {
    return this.withState('pending', limit);
  }

  async deadLetters(limit: number): Promise<OutboxRecord[]> {
    return this.withState('dead', limit);
  }

  async countByState(state: DeliveryState): Promise<number> {
    let count = 0;
    for (const record of this.outbox) if (record.state === state) count++;
    return count;
  }

  private withState(state: DeliveryState, limit: number): OutboxRecord[] {
    const found: OutboxRecord[] = [];
    for (const record of this.outbox) {
      if (record.state !== state) continue;
      found.push({ ...record });
      if (found.length === limit) break;
    }
    return found;
  }

  async setDelivery(id: string, update: DeliveryUpdate): Promise<void> {
    const record = this.byId.get(id);
    if (!record) return;
    record.state = update.state;
    record.attempts = update.attempts;
    record.updatedAt = update.now;
    if (update.lastError === undefined) delete record.lastError;
    else record.lastError = update.lastError;
  }

  claimStats(): { keys: number; evicted: number } {
    return this.claims.stats();
  }

  async ping(): Promise<void> {
    this.assertOpen();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('memory store is closed');
  }
}
