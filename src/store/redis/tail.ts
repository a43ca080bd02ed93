import type { OutboxRecord } from '../../ports.js';
import { recordOf } from './codec.js';
import { blockingOptions, connect, type ConnectionLogger, type ScriptedRedis } from './connections.js';

type Listener = (record: OutboxRecord) => void;
type StreamReply = Array<[stream: string, entries: Array<[id: string, fields: string[]]>]> | null;

/**
 * Every instance's commits, fanned out to this process's listeners: one dedicated connection
 * runs `XREAD BLOCK` on the outbox stream while anyone listens, from the last seq at the time
 * the first listener came, and survives outages with a capped backoff.
 */
export class OutboxTail {
  private readonly listeners = new Set<Listener>();
  private client: ScriptedRedis | undefined;
  /** Resolves once the tail knows where it starts: a commit issued after it is delivered. */
  ready: Promise<void> = Promise.resolve();

  constructor(
    private readonly url: string,
    private readonly prefix: string,
    private readonly logger?: ConnectionLogger,
  ) {}

  subscribe(listener: Listener): () => void {
    this.listeners.add(listener);
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
    let lastId: string | undefined;
    let backoffMs = 100;
    while (this.client === client) {
      try {
        if (lastId === undefined) {
          lastId = `${(await client.get(`${this.prefix}seq`)) ?? 0}-0`;
          started();
        }
        const reply = (await client.xread('COUNT', 500, 'BLOCK', 10_000, 'STREAMS', `${this.prefix}out`, lastId)) as StreamReply;
        backoffMs = 100;
        for (const [, entries] of reply ?? []) {
          for (const [id, fields] of entries) {
            lastId = id;
            this.deliver(recordOf([id, fields, null]));
          }
        }
      } catch (error) {
        started(); // never hold a commit back for a tail that cannot start
        if (this.client !== client) return;
        this.logger?.warn({ err: error }, `Redis store: outbox tail failed, retrying in ${backoffMs} ms`);
        await new Promise((resolve) => setTimeout(resolve, backoffMs));
        backoffMs = Math.min(backoffMs * 2, 5000);
      }
    }
  }

  private deliver(record: OutboxRecord): void {
    for (const listener of [...this.listeners]) {
      try {
        listener(record);
      } catch (error) {
        this.logger?.warn({ err: error, seq: record.seq }, 'Redis store: an outbox listener threw');
      }
    }
  }
}
