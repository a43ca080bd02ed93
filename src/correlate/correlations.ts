import type { BotRef, CorrelationRecord, InboundEvent } from '../events/inbound.js';
import { botsOf, soloRecord } from './bots.js';

/** The counts `correlationStats()` adds to the store's: this process's own. */
export interface CorrelationCounts {
  /** Deliveries that took a correlation step (namespaces where several bots deliver). */
  observed: number;
  /** Deliveries of events already taken: platform retries and other bots' copies. */
  duplicates: number;
}

/**
 * What this process saw of correlation: the group the store gave each event it admitted (for
 * the library's correlation views, `intake.correlation(event)`) and its counts. The groups
 * themselves are store state; an event's entry goes with the event (a WeakMap).
 */
export class Correlations {
  private readonly groups = new WeakMap<InboundEvent, CorrelationRecord>();
  private readonly tally: CorrelationCounts = { observed: 0, duplicates: 0 };

  /** A delivery took a correlation step. */
  observed(): void {
    this.tally.observed++;
  }

  /** A delivery was admitted: the groups the store returned, and how many of its events were repeats. */
  admitted(groups: Iterable<readonly [InboundEvent, CorrelationRecord]>, repeats: number): void {
    for (const [event, group] of groups) this.groups.set(event, group);
    this.tally.duplicates += repeats;
  }

  /** The counts so far, as a copy. */
  counts(): CorrelationCounts {
    return { ...this.tally };
  }

  /** What is known of an event's logical group: the store's, else its own delivery alone. */
  groupOf(event: InboundEvent): CorrelationRecord {
    return this.groups.get(event) ?? soloRecord(event);
  }

  /** Every bot that delivered an event's logical event, first arrival first. */
  botsOf(event: InboundEvent): BotRef[] {
    return botsOf(this.groups.get(event), event);
  }
}
