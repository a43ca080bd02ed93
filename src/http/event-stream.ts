import type Koa from 'koa';
import { PassThrough } from 'node:stream';
import { RequestError } from '../errors.js';
import type { Pipeline } from '../pipeline.js';
import type { OutboxRecord } from '../store/types.js';
import { outputJson } from '../emit/output.js';

const REPLAY_PAGE = 500;
const HEARTBEAT_MS = 15_000;

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
export function eventStream(pipeline: Pipeline): Koa.Middleware {
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
    const send = (record: OutboxRecord) => {
      if (after !== undefined && record.seq <= lastSent) return;
      lastSent = record.seq;
      stream.write(frame(record));
    };
    const unsubscribe = pipeline.outlet.subscribe((record) => {
      if (held) held.push(record);
      else if (after === undefined) stream.write(frame(record));
      else send(record);
    });
    const heartbeat = setInterval(() => stream.write(': keep-alive\n\n'), HEARTBEAT_MS);
    heartbeat.unref();
    const stop = () => {
      clearInterval(heartbeat);
      unsubscribe();
      stream.end();
    };
    ctx.req.on('close', stop);
    stream.write('retry: 2000\n\n');

    if (after !== undefined) {
      try {
        for (;;) {
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
