import type Koa from 'koa';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../core/clock.js';
import { RequestError, UnavailableError } from '../core/errors.js';
import { type OutboxLife, type OutboxRecord } from '../core/ports/index.js';
import { type TraceTrail } from '../events/trace.js';
import type { OutboxReader } from '../core/ports/index.js';
import { activityFrame, eventId, gapFrame, outputFrame, replayStart, resumePoint } from './resume.js';
import { serveStream, type Client, type Replay } from './stream-client.js';

const REPLAY_PAGE = 500;
/** A stream cut as too slow keeps the records it had not read from being trimmed this long. */
const CUT_GRACE_MS = 10 * 60_000;

export type { OutboxReader };

export interface StreamOptions {
  logger: Logger;
  now(): number;
  /** Arms each stream's heartbeat. @default systemClock */
  clock?: Clock;
  /** Streams open at once, across `/v1/events` and `/v1/activity`; past it a client gets 503. @default 100 */
  maxStreams?: number;
  /** Unsent bytes a client may fall behind before it is cut (it resumes with Last-Event-ID). @default 1 MiB */
  maxBufferedBytes?: number;
}

/**
 * Server-Sent Events for `/v1/events` (the outbox) and `/v1/activity` (the verdict trail).
 * Each record is serialized once and the same frame goes to every client. A client that
 * resumes after seq N gets every retained record after N, then live ones, with no gap and no
 * repeat (live records arriving during the replay are held); when records it asked for were
 * already trimmed, a `gap` event says so before the replay; when its id is of an earlier life of
 * the store's seqs (resume.ts), a `gap` event with `reset` does. A client that stops reading is cut
 * past `maxBufferedBytes` (logged once), and what it had not read is kept from trimming for a
 * while so that it can resume.
 */
export class StreamHub {
  private readonly maxStreams: number;
  private readonly maxBuffered: number;
  private readonly outputs = new Set<Client>();
  private readonly activity = new Set<Client>();
  /** Streams cut as too slow: the seq they had reached, and when. */
  private readonly cut = new Map<Client, { lastSent: number; at: number }>();
  private untail: (() => void) | undefined;
  /** The outbox the streams read (set by the first `events` stream). */
  private reader: OutboxReader | undefined;
  /** The life of its seqs, as last read (live frames' ids name it). */
  private outboxLife: OutboxLife | undefined;

  constructor(private readonly options: StreamOptions) {
    this.maxStreams = options.maxStreams ?? 100;
    this.maxBuffered = options.maxBufferedBytes ?? 1024 * 1024;
  }

  get count(): number {
    return this.outputs.size + this.activity.size;
  }

  /** The highest seq the trim must keep everything after (what a connected or recently cut stream has not read). */
  keepAfterSeq(): number {
    let keep = Number.MAX_SAFE_INTEGER;
    for (const client of this.outputs) if (client.drained < keep) keep = client.drained;
    const now = this.options.now();
    for (const [client, cut] of this.cut) {
      if (now - cut.at > CUT_GRACE_MS) this.cut.delete(client);
      else if (cut.lastSent < keep) keep = cut.lastSent;
    }
    return keep;
  }

  /** `GET /v1/events`. */
  events(reader: OutboxReader): Koa.Middleware {
    return async (ctx) => {
      const point = resumePoint(ctx);
      // (Unreadable, the life last read names the frames; a resume then reads the store anyway.)
      const life = await reader.life?.().catch(() => this.outboxLife);
      this.outboxLife = life;
      const start = point && replayStart(point, life);
      if (start && !start.reset) {
        const last = await reader.lastSeq();
        if (start.after > last) {
          throw new RequestError(
            'resume_point_ahead',
            409,
            `Last-Event-ID ${start.after} is ahead of this store's newest event ${last} (was the store reset?); reconnect with after=${eventId(last, life)} or without Last-Event-ID`,
          );
        }
      }
      this.reader = reader;
      if (!this.untail) {
        this.untail = reader.tail((record) => this.fanOut(record), {
          gap: (after, next) => this.gap(after, next),
          reset: (rollback) => this.reset(rollback),
        });
      }
      await this.serve(ctx, this.outputs, {
        start,
        contiguous: true,
        newest: () => reader.lastSeq(),
        page: async (from) => {
          const page = await reader.outboxAfter(from, REPLAY_PAGE);
          return {
            frames: page.map((record) => ({ n: record.seq, text: outputFrame(record, life) })),
            more: page.length === REPLAY_PAGE,
          };
        },
      });
    };
  }

  /** `GET /v1/activity`: the verdict trail, resumable by its sequence. */
  activityStream(trail: Pick<TraceTrail, 'shared' | 'life' | 'last' | 'after' | 'subscribe'>): Koa.Middleware {
    let subscribed = false;
    // An in-process trail numbers its entries from 1 again in each process: each is a life.
    const life = trail.life === undefined ? undefined : { tag: trail.life, since: 0 };
    return async (ctx) => {
      const point = resumePoint(ctx);
      if (!subscribed) {
        subscribed = true;
        trail.subscribe((entry) => this.broadcast(this.activity, entry.n, activityFrame(entry, life)));
      }
      const start = point && replayStart(point, life);
      if (start && !start.reset) {
        const last = await trail.last();
        if (start.after > last) {
          throw new RequestError(
            'resume_point_ahead',
            409,
            `Last-Event-ID ${start.after} is ahead of the newest activity entry ${last} (an in-process trail restarts with the process); reconnect with after=${eventId(last, life)} or without Last-Event-ID`,
          );
        }
      }
      await this.serve(ctx, this.activity, {
        start,
        contiguous: !trail.shared,
        newest: () => trail.last(),
        page: async (from) => {
          const page = await trail.after(from, REPLAY_PAGE);
          return {
            frames: page.map((entry) => ({ n: entry.n, text: activityFrame(entry, life) })),
            more: page.length === REPLAY_PAGE,
          };
        },
      });
    };
  }

  private fanOut(record: OutboxRecord): void {
    if (this.outputs.size === 0) return;
    this.broadcast(this.outputs, record.seq, outputFrame(record, this.outboxLife));
  }

  /**
   * The store's tail skipped records trimmed before it read them (its link hung while another
   * instance trimmed): each live client hears of the hole it would otherwise not see.
   */
  private gap(_after: number, next: number): void {
    for (const client of this.outputs) {
      // (A client still replaying holds live frames: those without an id are dropped, and its replay sees the hole itself.)
      if (client.lastSent >= next - 1) continue;
      client.write(gapFrame({ after: client.lastSent, next }));
    }
  }

  /**
   * Keep what a cut stream had not read from trimming for a while: here, and in the store when
   * other instances trim it too (Redis).
   */
  private keepUnread(client: Client): void {
    const at = this.options.now();
    this.cut.set(client, { lastSent: client.drained, at });
    this.reader?.keepUnread?.(client.drained, CUT_GRACE_MS, at).catch((error: unknown) => {
      this.options.logger.warn(
        { err: error, lastSent: client.drained },
        "cannot keep a cut stream's unread records in the store; another instance may trim them",
      );
    });
  }

  /**
   * The store was reset (its seqs went back, in a new life): every outbox stream is cut, so that
   * its client resumes with its Last-Event-ID, of the earlier life: it is told of the reset and
   * replayed the new life (a plain seq ahead of the store now gets `409 resume_point_ahead`).
   * The positions of streams cut before mean nothing in the new seqs.
   */
  private reset(rollback: { from: number; to: number }): void {
    this.options.logger.error(
      { ...rollback, streams: this.outputs.size },
      `the store was reset (outbox seq ${rollback.from} -> ${rollback.to}); cutting every event stream so that its client resumes and learns of it`,
    );
    this.cut.clear();
    for (const client of [...this.outputs]) client.end();
    this.reader?.life?.().then(
      (life) => {
        this.outboxLife = life;
      },
      () => undefined,
    );
  }

  private broadcast(clients: Set<Client>, n: number, text: string): void {
    for (const client of clients) {
      if (n <= client.lastSent) continue;
      if (client.write(text)) client.lastSent = n;
    }
  }

  private async serve(ctx: Koa.Context, clients: Set<Client>, replay: Replay): Promise<void> {
    if (this.count >= this.maxStreams) {
      throw new UnavailableError(
        'too_many_streams',
        `${this.count} event streams are open (events.maxStreams ${this.maxStreams}); retry later`,
        5,
      );
    }
    await serveStream(ctx, replay, {
      clients,
      logger: this.options.logger,
      clock: this.options.clock ?? systemClock,
      maxBuffered: this.maxBuffered,
      // Only outbox streams hold the trim back (activity streams count trail entries, not seqs).
      ...(clients === this.outputs ? { cut: (client: Client) => this.keepUnread(client) } : {}),
    });
  }
}
