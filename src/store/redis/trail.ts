import type { TraceEntry } from '../../events/trace.js';
import type { TrailLog, TrailLogOptions } from '../../core/ports/index.js';
import { blockingOptions, connect, type ConnectionLogger, type ScriptedRedis } from './connections.js';
import { trailFindReply } from './replies.js';

/** Entries written in one script call at most (a tick with more writes several). */
const MAX_WRITE = 500;
/** How long one XREAD of the live tail blocks before it looks whether anyone still listens. */
const BLOCK_MS = 2000;

/** An entry's sequence number from its stream id `<ms>-<n>` (n < 1000, see trail-add.lua). */
export const seqOfId = (id: string): number => {
  const dash = id.indexOf('-');
  return Number(id.slice(0, dash)) * 1000 + Number(id.slice(dash + 1));
};
/** The stream id of a sequence number. */
export const idOfSeq = (seq: number): string => `${Math.floor(seq / 1000)}-${seq % 1000}`;

/** The names an entry is found by: its id, platform id, merged ids and fuzzy key (each once). */
function namesOf(entry: Omit<TraceEntry, 'n'>): string[] {
  const names = new Set<string>();
  if (entry.id !== '') names.add(entry.id);
  if (entry.platformId !== undefined && entry.platformId !== '') names.add(entry.platformId);
  for (const id of entry.messageIds ?? []) if (id !== '') names.add(id);
  // A fuzzy duplicate's trace finds the message it repeats by the key both carry.
  if (entry.fuzzyKey !== undefined) names.add(entry.fuzzyKey);
  return [...names];
}

function entryOf(id: string, json: string): TraceEntry {
  return { n: seqOfId(id), ...(JSON.parse(json) as Omit<TraceEntry, 'n'>) };
}

/**
 * The verdict trail in Redis, shared by every instance on it: one STREAM of entries (trimmed
 * past `trace.maxEntries` and `trace.retentionMs`) and one small STRING per name listing the
 * ids of the entries naming it (expiring `trace.retentionMs` after its last entry); keys in
 * lua/trail-add.lua.
 *
 * Writes stay off the ingest path: `publish` queues the entry, and the entries recorded until
 * the recording code yields go to Redis in one script call on the background connection, sent
 * before the webhook's answer and never waited for. A write that fails is logged once per outage and dropped
 * (the trail is a view for operators, not a record the service depends on).
 */
export class RedisTrail implements TrailLog {
  private queued: Array<Omit<TraceEntry, 'n'>> = [];
  private scheduled = false;
  private failing = false;
  private readonly listeners = new Set<(entry: TraceEntry) => void>();
  private reader: ScriptedRedis | undefined;
  /** The live tail's start point, settled before `last` answers (so a stream going live misses nothing). */
  private started: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly url: string,
    private readonly prefix: string,
    private readonly commands: ScriptedRedis,
    private readonly options: TrailLogOptions,
    private readonly logger?: ConnectionLogger,
  ) {
    // Closed with its store: when the store's connection ends for good.
    commands.once('end', () => this.close());
  }

  publish(entry: Omit<TraceEntry, 'n'>): void {
    if (this.closed) return;
    this.queued.push(entry);
    if (this.scheduled) return;
    this.scheduled = true;
    // Once the code that recorded it yields: the write is on the socket before the webhook's
    // answer is (so another instance asked right after the answer finds it), and every entry
    // recorded until then goes with it.
    queueMicrotask(() => this.write());
  }

  private write(): void {
    this.scheduled = false;
    const { instance, retentionMs, maxEntries } = this.options;
    while (this.queued.length > 0) {
      const args: Array<string | number> = [Math.max(1, Math.floor(retentionMs)), maxEntries];
      for (const entry of this.queued.splice(0, MAX_WRITE)) {
        const names = namesOf(entry);
        args.push(JSON.stringify({ ...entry, instance }), names.length, ...names);
      }
      this.commands.aiTrailAdd(this.prefix, ...args).then(
        () => {
          this.failing = false;
        },
        (error: Error) => {
          if (this.failing) return;
          this.failing = true;
          this.logger?.warn(
            { err: error },
            `Redis store: trail entries could not be written (${error.message}); /v1/trace and /v1/activity miss them`,
          );
        },
      );
    }
  }

  async last(): Promise<number> {
    await this.started;
    const id = await this.commands.get(`${this.prefix}trail:last`);
    return id ? seqOfId(id) : 0;
  }

  async after(n: number, limit: number): Promise<TraceEntry[]> {
    if (limit <= 0) return [];
    const from = n <= 0 ? '-' : `(${idOfSeq(n)}`;
    const found = await this.commands.xrange(`${this.prefix}trail`, from, '+', 'COUNT', limit);
    return found.map(([id, fields]) => entryOf(id, fields[1] as string));
  }

  async naming(names: readonly string[]): Promise<TraceEntry[]> {
    const wanted = names.filter((name) => name !== '');
    if (wanted.length === 0) return [];
    return trailFindReply(await this.commands.aiTrailFind(this.prefix, ...wanted)).map(([id, json]) =>
      entryOf(id, json),
    );
  }

  subscribe(listener: (entry: TraceEntry) => void): () => void {
    this.listeners.add(listener);
    this.started ??= this.startTail();
    return () => this.listeners.delete(listener);
  }

  /** Read the stream from its newest id on, for as long as anyone listens (one XREAD BLOCK connection). */
  private async startTail(): Promise<void> {
    const reader = connect(this.url, 'trail', blockingOptions(), this.logger);
    this.reader = reader;
    let from = (await this.commands.get(`${this.prefix}trail:last`).catch(() => null)) ?? '0-0';
    const loop = async (): Promise<void> => {
      while (!this.closed) {
        let reply: Array<[string, Array<[string, string[]]>]> | null;
        try {
          reply = (await reader.xread(
            'COUNT',
            500,
            'BLOCK',
            BLOCK_MS,
            'STREAMS',
            `${this.prefix}trail`,
            from,
          )) as typeof reply;
        } catch {
          if (this.closed) return;
          await new Promise((resolve) => setTimeout(resolve, 200));
          continue;
        }
        for (const [id, fields] of reply?.[0]?.[1] ?? []) {
          from = id;
          const entry = entryOf(id, fields[1] as string);
          for (const listener of this.listeners) listener(entry);
        }
      }
    };
    void loop();
  }

  close(): void {
    this.closed = true;
    this.reader?.disconnect();
  }
}
