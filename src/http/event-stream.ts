import type Koa from 'koa';
import type { Logger } from 'pino';
import { PassThrough } from 'node:stream';
import { RequestError, UnavailableError } from '../errors.js';
import { outputJson } from '../events/output.js';
import { type OutboxRecord } from '../ports.js';
import { type TraceEntry, type TraceTrail } from '../events/trace.js';
import type { OutboxReader } from '../ports.js';
import { numericParam } from './query.js';

const REPLAY_PAGE = 500;
const HEARTBEAT_MS = 15_000;
/** A stream cut as too slow keeps the records it had not read from being trimmed this long. */
const CUT_GRACE_MS = 10 * 60_000;

export type { OutboxReader };

export interface StreamOptions {
  logger: Logger;
  now(): number;
  /** Streams open at once, across `/v1/events` and `/v1/activity`; past it a client gets 503. @default 100 */
  maxStreams?: number;
  /** Unsent bytes a client may fall behind before it is cut (it resumes with Last-Event-ID). @default 1 MiB */
  maxBufferedBytes?: number;
}

/** `Last-Event-ID` wins over `?after=`; neither means live only. */
function resumePoint(ctx: Koa.Context): number | undefined {
  const after = numericParam(ctx, 'after', 'bad_resume_point', 'the id of the last event you have');
  const raw = ctx.get('last-event-id') || (after ?? '');
  if (raw === '') return undefined;
  // Up to 16 digits: the trail on Redis numbers entries by time (`<ms> * 1000 + n`).
  if (!/^\d{1,16}$/.test(raw) || !Number.isSafeInteger(Number(raw))) throw new RequestError('bad_resume_point', 400, `Last-Event-ID / after must be a sequence number (got "${raw}")`);
  return Number(raw);
}

interface Client {
  /** The newest record handed to this client. */
  lastSent: number;
  /** The newest record known to have left the stream's buffer (the client has it, or the socket does). */
  drained: number;
  /** Queue a frame; false when the client was cut instead. */
  write(text: string): boolean;
  /** Close the stream: the client reconnects with its Last-Event-ID. */
  end(): void;
}

/**
 * Server-Sent Events for `/v1/events` (the outbox) and `/v1/activity` (the verdict trail).
 * Each record is serialized once and the same frame goes to every client. A client that
 * resumes after seq N gets every retained record after N, then live ones, with no gap and no
 * repeat (live records arriving during the replay are held); when records it asked for were
 * already trimmed, a `gap` event says so before the replay. A client that stops reading is cut
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
      const after = resumePoint(ctx);
      if (after !== undefined) {
        const last = await reader.lastSeq();
        if (after > last) {
          throw new RequestError('resume_point_ahead', 409, `Last-Event-ID ${after} is ahead of this store's newest event ${last} (was the store reset?); reconnect with after=${last} or without Last-Event-ID`);
        }
      }
      this.reader = reader;
      if (!this.untail) {
        this.untail = reader.tail((record) => this.fanOut(record), {
          gap: (after, next) => this.gap(after, next),
          reset: (rollback) => this.reset(rollback),
        });
      }
      await this.serve(ctx, this.outputs, after, () => reader.lastSeq(), async (from) => {
        const page = await reader.outboxAfter(from, REPLAY_PAGE);
        return { frames: page.map((record) => ({ n: record.seq, text: frame(record) })), more: page.length === REPLAY_PAGE };
      });
    };
  }

  /** `GET /v1/activity`: the verdict trail, resumable by its sequence. */
  activityStream(trail: Pick<TraceTrail, 'shared' | 'last' | 'after' | 'subscribe'>): Koa.Middleware {
    let subscribed = false;
    return async (ctx) => {
      const after = resumePoint(ctx);
      if (!subscribed) {
        subscribed = true;
        trail.subscribe((entry) => this.broadcast(this.activity, entry.n, activityFrame(entry)));
      }
      if (after !== undefined) {
        const last = await trail.last();
        if (after > last) {
          throw new RequestError('resume_point_ahead', 409, `Last-Event-ID ${after} is ahead of the newest activity entry ${last} (an in-process trail restarts with the process); reconnect with after=${last} or without Last-Event-ID`);
        }
      }
      await this.serve(ctx, this.activity, after, () => trail.last(), async (from) => {
        const page = await trail.after(from, REPLAY_PAGE);
        return { frames: page.map((entry) => ({ n: entry.n, text: activityFrame(entry) })), more: page.length === REPLAY_PAGE };
      }, !trail.shared);
    };
  }

  private fanOut(record: OutboxRecord): void {
    if (this.outputs.size === 0) return;
    this.broadcast(this.outputs, record.seq, frame(record));
  }

  /**
   * The store's tail skipped records trimmed before it read them (its link hung while another
   * instance trimmed): each live client hears of the hole it would otherwise not see.
   */
  private gap(_after: number, next: number): void {
    for (const client of this.outputs) {
      // (A client still replaying holds live frames: those without an id are dropped, and its replay sees the hole itself.)
      if (client.lastSent >= next - 1) continue;
      client.write(`event: gap\ndata: ${JSON.stringify({ after: client.lastSent, next })}\n\n`);
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
      this.options.logger.warn({ err: error, lastSent: client.drained }, 'cannot keep a cut stream\'s unread records in the store; another instance may trim them');
    });
  }

  /**
   * The store was reset (its seqs went back): every outbox stream is cut, so that its client
   * resumes with its Last-Event-ID, ahead of the store now: `409 resume_point_ahead`. The
   * positions of streams cut before mean nothing in the new seqs.
   */
  private reset(rollback: { from: number; to: number }): void {
    this.options.logger.error({ ...rollback, streams: this.outputs.size }, `the store was reset (outbox seq ${rollback.from} -> ${rollback.to}); cutting every event stream so that its client resumes and learns of it`);
    this.cut.clear();
    for (const client of [...this.outputs]) client.end();
  }

  private broadcast(clients: Set<Client>, n: number, text: string): void {
    for (const client of clients) {
      if (n <= client.lastSent) continue;
      if (client.write(text)) client.lastSent = n;
    }
  }

  private async serve(
    ctx: Koa.Context,
    clients: Set<Client>,
    after: number | undefined,
    newest: () => Promise<number>,
    page: (from: number) => Promise<{ frames: Array<{ n: number; text: string }>; more: boolean }>,
    /** Whether sequence numbers are contiguous, so a hole is a gap (not on the trail of a shared store, numbered by time). */
    contiguous = true,
  ): Promise<void> {
    if (this.count >= this.maxStreams) {
      throw new UnavailableError('too_many_streams', `${this.count} event streams are open (events.maxStreams ${this.maxStreams}); retry later`, 5);
    }
    const stream = new PassThrough();
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    ctx.body = stream;

    let stopped = false;
    // Frames broadcast before the replay (or the live start point) is settled wait here.
    let held: string[] | undefined = [];
    const client: Client = {
      // Frames broadcast before the start point is settled are held (see `held`), and `goLive`
      // sends those past it: for a live-only client, past the newest seq when it connected.
      lastSent: after ?? 0,
      drained: after ?? 0,
      write: (text) => {
        if (stopped) return false;
        if (held) {
          held.push(text);
          return true;
        }
        if (emptied(stream)) client.drained = client.lastSent;
        if (stream.writableLength > this.maxBuffered) {
          // What is still buffered never reaches the client: keep everything after what drained.
          this.options.logger.warn({ lastSent: client.lastSent, drained: client.drained }, 'event stream client too slow; disconnected (it can resume with Last-Event-ID)');
          // Only outbox streams hold the trim back (activity streams count trail entries, not seqs).
          if (clients === this.outputs) this.keepUnread(client);
          stop();
          return false;
        }
        stream.write(text);
        return true;
      },
      end: () => stop(true),
    };
    const stop = (end = false) => {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      clients.delete(client);
      // Destroyed, not ended: what is still buffered will never be read (the client left or was
      // cut), and a replay waiting for 'drain' is released by 'close'. Ended when the service
      // closes a stream the client still reads: the response ends, the client reconnects.
      if (end) stream.end();
      else stream.destroy();
    };
    const heartbeat = setInterval(() => void client.write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    ctx.req.on('close', () => {
      stop();
      stream.destroy(); // an ended stream the client never read to its end, too
    });
    // The client may have left while the resume point was checked (a Redis round trip): its
    // 'close' came before the listener, and it would hold a stream slot and the trim for good.
    if (ctx.req.socket.destroyed) {
      stop();
      return;
    }
    stream.write('retry: 2000\n\n');
    /** Go live: send the frames held so far that come after `sentTo`, then every frame as it comes. */
    const goLive = (sentTo: number): void => {
      const live = held as string[];
      held = undefined;
      client.lastSent = sentTo;
      for (const text of live) {
        const n = Number(/^id: (\d+)/.exec(text)?.[1] ?? 0);
        if (n > sentTo && client.write(text)) client.lastSent = n;
      }
    };
    if (after === undefined) {
      // Live from here: what was committed before the connection is not sent. A record committed
      // after the newest seq was read may reach this client (a Redis tail) before that answer does.
      clients.add(client);
      const newestSeq = await newest().catch(() => 0);
      client.drained = newestSeq;
      goLive(newestSeq);
      return;
    }
    clients.add(client);
    // The replay runs after this middleware has returned: Koa starts sending a stream body only
    // then, and a replay that waits for the client to read (past maxBufferedBytes) would
    // otherwise wait for ever, the client without a byte.
    const replay = async (): Promise<void> => {
      let from = after;
      let gapAfter = after;
      /** The newest seq, read after a page came back empty and before the page read again. */
      let last: number | undefined;
      for (;;) {
        // Live frames held so far are in the store too: this read returns them (or newer).
        (held as string[]).length = 0;
        const { frames, more } = await page(from);
        for (const f of frames) {
          if (stopped) return;
          // Seqs are contiguous in the store: a hole is records trimmed before this client read them.
          if (contiguous && f.n > from + 1) stream.write(`event: gap\ndata: ${JSON.stringify({ after: from, next: f.n })}\n\n`);
          stream.write(f.text);
          from = f.n;
          // A resuming client reads at its own pace: wait for it rather than buffer the whole outbox.
          // ('drain' comes only after a write was refused: below the stream's own 16 KiB mark, write on.)
          if (stream.writableLength > this.maxBuffered && stream.writableNeedDrain) await drained(stream, () => stopped);
        }
        if (stopped) break;
        if (more) continue;
        if (from !== after || !contiguous) break;
        // Nothing after the resume point: all of it trimmed, or committed since the read? What
        // the store held before a second read (up to `last`) and that read did not return was
        // trimmed; a record committed between the first read and `newest()` is not a gap.
        if (last !== undefined) {
          gapAfter = last;
          break;
        }
        last = await newest();
        if (last <= after) break;
      }
      if (stopped) return;
      // Everything after the resume point was trimmed: say so, then go live.
      if (gapAfter > after) stream.write(`event: gap\ndata: ${JSON.stringify({ after, next: gapAfter + 1 })}\n\n`);
      // What the replay queued has left for the socket only once the stream is empty (as in
      // `write`): until then the trim keeps it, and a cut client resumes from what it had.
      if (emptied(stream)) client.drained = from;
      // Live frames that came during the last read: send those past where the replay ended.
      goLive(Math.max(from, gapAfter));
    };
    void replay().catch((error: unknown) => {
      this.options.logger.error({ err: error }, 'event stream replay failed');
      stop();
    });
  }
}

/** Nothing of `stream` is waiting in it, on its writing side or its reading side: the socket has it all. */
function emptied(stream: PassThrough): boolean {
  return stream.writableLength + stream.readableLength === 0;
}

/** Resolves when `stream` drained, or at once when `stopped()` says the client is gone (checked on close). */
function drained(stream: PassThrough, stopped: () => boolean): Promise<void> {
  return new Promise<void>((resolve) => {
    if (stopped()) return resolve();
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      resolve();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}

function activityFrame(entry: TraceEntry): string {
  return `id: ${entry.n}\nevent: activity\ndata: ${JSON.stringify(entry)}\n\n`;
}

function frame(record: OutboxRecord): string {
  return `id: ${record.seq}\nevent: ${record.type}\ndata: ${outputJson(record)}\n\n`;
}
