import type Koa from 'koa';
import { PassThrough } from 'node:stream';
import { RequestError } from '../errors.js';
import type { Pipeline } from '../pipeline.js';
import type { OutboxRecord } from '../store/types.js';
import { outputJson } from '../emit/output.js';

const REPLAY_PAGE = 500;
const HEARTBEAT_MS = 15_000;
/**
 * A client that stops reading is cut off past this much unsent output, instead of growing
 * the heap without bound; it reconnects with Last-Event-ID and resumes where it was.
 */
const MAX_BUFFERED_BYTES = 8 * 1024 * 1024;

function frame(record: OutboxRecord): string {
  return `id: ${record.seq}\nevent: ${record.type}\ndata: ${outputJson(record)}\n\n`;
}

/** `Last-Event-ID` wins over `?after=`; neither means live only. */
function resumePoint(ctx: Koa.Context): number | undefined {
  const raw = ctx.get('last-event-id') || (typeof ctx.query.after === 'string' ? ctx.query.after : '');
  if (raw === '') return undefined;
  if (!/^\d{1,15}$/.test(raw)) throw new RequestError('bad_resume_point', 400, `Last-Event-ID / after must be a sequence number (got "${raw}")`);
  return Number(raw);
}

/**
 * `GET /v1/events`: Server-Sent Events. A client resuming after seq N gets every retained
 * record after N, then live records, with no gap and no repeat: live records that arrive
 * during the replay are held and sent only if the replay did not already cover them.
 */
export function eventStream(pipeline: Pipeline, options: { maxBufferedBytes?: number } = {}): Koa.Middleware {
  const maxBuffered = options.maxBufferedBytes ?? MAX_BUFFERED_BYTES;
  return async function eventStream(ctx) {
    const after = resumePoint(ctx);
    const stream = new PassThrough();
    ctx.req.socket.setTimeout(0);
    ctx.req.socket.setNoDelay(true);
    ctx.status = 200;
    ctx.set({ 'Content-Type': 'text/event-stream; charset=utf-8', 'Cache-Control': 'no-cache, no-transform', Connection: 'keep-alive', 'X-Accel-Buffering': 'no' });
    ctx.body = stream;

    let lastSent = after ?? Number.MAX_SAFE_INTEGER;
    let held: OutboxRecord[] | undefined = after === undefined ? undefined : [];
    const write = (text: string) => {
      if (stream.writableLength > maxBuffered) {
        pipeline.logger.warn({ lastSent }, 'event stream client too slow; disconnected (it can resume with Last-Event-ID)');
        stop();
        return;
      }
      stream.write(text);
    };
    const send = (record: OutboxRecord) => {
      if (after !== undefined && record.seq <= lastSent) return;
      lastSent = record.seq;
      write(frame(record));
    };
    const unsubscribe = pipeline.outlet.subscribe((record) => {
      if (held) held.push(record);
      else if (after === undefined) {
        lastSent = record.seq;
        write(frame(record));
      } else send(record);
    });
    const heartbeat = setInterval(() => write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    let stopped = false;
    function stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(heartbeat);
      unsubscribe();
      stream.end();
    }
    ctx.req.on('close', stop);
    stream.write('retry: 2000\n\n');

    if (after !== undefined) {
      try {
        while (!stopped) {
          const page = await pipeline.store.outboxAfter(lastSent, REPLAY_PAGE);
          for (const record of page) send(record);
          if (page.length < REPLAY_PAGE) break;
        }
      } catch (error) {
        pipeline.logger.error({ err: error }, 'event stream replay failed');
        stop();
        return;
      }
      const pending = held ?? [];
      held = undefined;
      for (const record of pending) send(record);
    }
  };
}
