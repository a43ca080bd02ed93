import { backoffCeilingMs } from '../../core/backoff.js';
import type { OutboxRecord, TailEvents } from '../../core/ports/index.js';
import { recordOf } from './codec.js';
import { blockingOptions, connect, type ConnectionLogger, type ScriptedRedis } from './connections.js';
import type { StoreIdentity } from './identity.js';

type Listener = (record: OutboxRecord) => void;
type StreamReply = Array<[stream: string, entries: Array<[id: string, fields: string[]]>]> | null;

/** How often the tail checks that the store was not reset (also its longest block on XREAD). @default 1000 */
const CHECK_EVERY_MS = 1000;
/** The wait after a failed read: 100 ms doubling to 5 s, so an outage is noticed soon after it ends. */
const TAIL_BACKOFF = { minMs: 100, maxMs: 5000 } as const;

/**
 * Every instance's commits, fanned out to this process's listeners: one dedicated connection
 * runs `XREAD BLOCK` on the outbox stream while anyone listens, from the last seq at the time
 * the first listener came, and survives outages with a capped backoff.
 *
 * Seqs are contiguous in the stream past what streams have read: a next record that is not
 * the one after the last was trimmed while this tail could not read (a hung link), and the
 * listeners hear of the hole (`gap`) before the record. At most every `checkEveryMs`, and
 * after each idle block, the tail checks the store's identity (see identity.ts): after a
 * rollback it starts again from the store's seq and tells the listeners (`reset`).
 */
export class OutboxTail {
  private readonly listeners = new Map<Listener, TailEvents | undefined>();
  private client: ScriptedRedis | undefined;
  /** Resolves once the tail knows where it starts: a commit issued after it is delivered. */
  ready: Promise<void> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly prefix: string,
    private readonly identity: StoreIdentity,
    private readonly logger?: ConnectionLogger,
    private readonly checkEveryMs = CHECK_EVERY_MS,
  ) {}

  subscribe(listener: Listener, events?: TailEvents): () => void {
    this.listeners.set(listener, events);
    if (this.listeners.size === 1) this.start();
    return () => {
      if (this.listeners.delete(listener) && this.listeners.size === 0) this.stop();
    };
  }

  stop(): void {
    const client = this.client;
    this.client = undefined;
    client?.disconnect();
  }

  private start(): void {
    const client = connect(this.url, 'tail', blockingOptions(), this.logger);
    this.client = client;
    let started!: () => void;
    this.ready = new Promise((resolve) => (started = resolve));
    void this.follow(client, started);
  }

  private async follow(client: ScriptedRedis, started: () => void): Promise<void> {
    let last: number | undefined;
    let generation = this.identity.generation;
    let checkedAt = 0;
    let failures = 0;
    while (this.client === client) {
      try {
        if (last === undefined || performance.now() - checkedAt >= this.checkEveryMs) {
          const seq = await this.identity.check(client);
          checkedAt = performance.now();
          if (last === undefined) {
            last = seq;
            started();
          } else if (generation !== this.identity.generation) {
            // The store was reset: what this tail waited for will never come; start from its seq.
            generation = this.identity.generation;
            const from = last;
            last = seq;
            this.each((events) => events?.reset?.({ from, to: seq }));
          }
        }
        const reply = (await client.xread(
          'COUNT',
          500,
          'BLOCK',
          this.checkEveryMs,
          'STREAMS',
          `${this.prefix}out`,
          `${last}-0`,
        )) as StreamReply;
        failures = 0;
        if (!reply) checkedAt = 0; // idle: check at once
        for (const [, entries] of reply ?? []) {
          for (const [id, fields] of entries) {
            const seq = Number.parseInt(id, 10);
            if (seq > last + 1) {
              const after = last;
              this.each((events) => events?.gap?.(after, seq));
            }
            last = seq;
            this.identity.saw(seq);
            this.deliver(recordOf([id, fields, null]));
          }
        }
      } catch (error) {
        started(); // never hold a commit back for a tail that cannot start
        if (this.client !== client) return;
        // The shared backoff's ceiling, unjittered: one tail per instance, nothing to spread.
        const waitMs = backoffCeilingMs(failures++, TAIL_BACKOFF);
        this.logger?.warn({ err: error }, `Redis store: outbox tail failed, retrying in ${waitMs} ms`);
        checkedAt = 0; // after an outage: was the store reset meanwhile?
        await new Promise((resolve) => setTimeout(resolve, waitMs));
      }
    }
  }

  private each(call: (events: TailEvents | undefined) => void): void {
    for (const events of [...this.listeners.values()]) {
      try {
        call(events);
      } catch (error) {
        this.logger?.warn({ err: error }, 'Redis store: an outbox listener threw');
      }
    }
  }

  private deliver(record: OutboxRecord): void {
    for (const listener of [...this.listeners.keys()]) {
      try {
        listener(record);
      } catch (error) {
        this.logger?.warn({ err: error, seq: record.seq }, 'Redis store: an outbox listener threw');
      }
    }
  }
}
