import type Koa from 'koa';
import type { Logger } from 'pino';
import { PassThrough } from 'node:stream';
import type { Clock } from '../core/clock.js';
import { gapFrame, type ReplayStart } from './resume.js';

const HEARTBEAT_MS = 15_000;

/** What a stream replays before it goes live, and how. */
export interface Replay {
  /** Where the client resumes (undefined: live only). */
  start: ReplayStart | undefined;
  /** The newest seq. */
  newest(): Promise<number>;
  /** Frames after `from`, a page at a time. */
  page(from: number): Promise<{ frames: Array<{ n: number; text: string }>; more: boolean }>;
  /** Whether sequence numbers are contiguous, so a hole is a gap (not on the trail of a shared store, numbered by time). */
  contiguous: boolean;
}

export interface Client {
  /** The newest record handed to this client. */
  lastSent: number;
  /** The newest record known to have left the stream's buffer (the client has it, or the socket does). */
  drained: number;
  /** Queue a frame; false when the client was cut instead. */
  write(text: string): boolean;
  /** Close the stream: the client reconnects with its Last-Event-ID. */
  end(): void;
}

/** Where one stream is served: the clients it joins, the log, its bound, what to do when it is cut. */
export interface StreamOf {
  clients: Set<Client>;
  logger: Logger;
  /** Arms the heartbeat. */
  clock: Clock;
  /** Unsent bytes past which the client is cut. */
  maxBuffered: number;
  /** Called when the client is cut as too slow (it resumes with Last-Event-ID). */
  cut?(client: Client): void;
}

/**
 * One client's event stream: the response body, its heartbeat, the replay after its resume
 * point (waiting for the client to read past `maxBuffered`), then live frames as the hub
 * broadcasts them (`client.write`), held until the replay has settled where live begins. A
 * client that falls `maxBuffered` behind on live frames is cut.
 */
export async function serveStream(
  ctx: Koa.Context,
  { start, newest, page, contiguous }: Replay,
  { clients, logger, clock, maxBuffered, cut }: StreamOf,
): Promise<void> {
  const after = start?.after;
  const stream = new PassThrough();
  ctx.req.socket.setTimeout(0);
  ctx.req.socket.setNoDelay(true);
  ctx.status = 200;
  ctx.set({
    'Content-Type': 'text/event-stream; charset=utf-8',
    'Cache-Control': 'no-cache, no-transform',
    Connection: 'keep-alive',
    'X-Accel-Buffering': 'no',
  });
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
      if (stream.writableLength > maxBuffered) {
        // What is still buffered never reaches the client: keep everything after what drained.
        logger.warn(
          { lastSent: client.lastSent, drained: client.drained },
          'event stream client too slow; disconnected (it can resume with Last-Event-ID)',
        );
        cut?.(client);
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
    clock.clearInterval(heartbeat);
    clients.delete(client);
    // Destroyed, not ended: what is still buffered will never be read (the client left or was
    // cut), and a replay waiting for 'drain' is released by 'close'. Ended when the service
    // closes a stream the client still reads: the response ends, the client reconnects.
    if (end) stream.end();
    else stream.destroy();
  };
  const heartbeat = clock.setInterval(() => void client.write(': keep-alive\n\n'), HEARTBEAT_MS);
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
  if (start?.reset) stream.write(start.reset);
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
        if (contiguous && f.n > from + 1) stream.write(gapFrame({ after: from, next: f.n }));
        stream.write(f.text);
        from = f.n;
        // A resuming client reads at its own pace: wait for it rather than buffer the whole outbox.
        // ('drain' comes only after a write was refused: below the stream's own 16 KiB mark, write on.)
        if (stream.writableLength > maxBuffered && stream.writableNeedDrain) await drained(stream, () => stopped);
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
    if (gapAfter > after) stream.write(gapFrame({ after, next: gapAfter + 1 }));
    // What the replay queued has left for the socket only once the stream is empty (as in
    // `write`): until then the trim keeps it, and a cut client resumes from what it had.
    if (emptied(stream)) client.drained = from;
    // Live frames that came during the last read: send those past where the replay ended.
    goLive(Math.max(from, gapAfter));
  };
  void replay().catch((error: unknown) => {
    logger.error({ err: error }, 'event stream replay failed');
    stop();
  });
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
