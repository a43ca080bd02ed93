import type Koa from 'koa';
import type Router from '@koa/router';
import { RequestError } from '../../core/errors.js';
import type { OutboxRecord } from '../../core/ports/index.js';
import { outputOf } from '../../events/output.js';
import type { HttpPorts } from '../ports.js';

/**
 * What came out, read by the operator: the event streams (`/v1/events`, `/v1/activity`), one
 * output with its delivery state, the trace of a message, and agent turns.
 */
export function outputRoutes(
  router: Router,
  requireToken: Koa.Middleware,
  ports: Pick<HttpPorts, 'streams' | 'outbox' | 'trail' | 'trace' | 'turns' | 'claims'>,
): void {
  router.get('/v1/events', requireToken, ports.streams.events(ports.outbox));
  router.get('/v1/activity', requireToken, ports.streams.activityStream(ports.trail));

  router.get('/v1/events/:id', requireToken, async (ctx) => {
    const record = await ports.outbox.outboxGet(ctx.params.id as string);
    if (!record)
      throw new RequestError(
        'not_found',
        404,
        `No event "${ctx.params.id}" is retained (unknown, or older than events.retentionMs)`,
      );
    const delivery = deliveryOf1(record);
    // A worker's claim on it, while its lease runs (agent.claims).
    const claimed = record.state === 'pending' ? await ports.claims?.claimed(record.id) : undefined;
    if (claimed) delivery.claimed = claimed;
    ctx.body = { event: outputOf(record), delivery };
  });

  router.get('/v1/trace/:id', requireToken, async (ctx) => {
    const trace = await ports.trace(ctx.params.id as string);
    if (!trace) {
      const seenBy = ports.trail.shared ? 'any instance on this store' : 'this process';
      throw new RequestError(
        'not_found',
        404,
        `Nothing is known of "${ctx.params.id}": not a platform id, ingest id or output id seen by ${seenBy} within trace.retentionMs, nor a retained output`,
      );
    }
    ctx.body = trace;
  });

  // Agent turns: any instance closes a turn, whichever holds its messages (the store is shared).
  router.post('/v1/turns/:id/done', requireToken, async (ctx) => {
    const id = ctx.params.id as string;
    if (id.length > 128) throw new RequestError('bad_id', 400, 'An output id is at most 128 characters (ours are 21)');
    const done = await ports.turns.done(id);
    if (done.result === 'unknown')
      throw new RequestError(
        'turn_unknown',
        404,
        `No output "${id}" is known (never emitted, or older than events.retentionMs): there is no turn of it to close`,
      );
    ctx.body =
      done.result === 'closed'
        ? { closed: true, sessionKey: done.sessionKey, released: done.held }
        : { closed: false, already: true, sessionKey: done.sessionKey };
  });
  router.get('/v1/sessions/:sessionKey/turn', requireToken, async (ctx) => {
    const view = await ports.turns.of(ctx.params.sessionKey as string);
    ctx.body = view.open
      ? { open: true, outputId: view.outputId, openedAt: view.openedAt, until: view.until, held: view.held }
      : { open: false, held: view.held };
  });
}

function deliveryOf1(record: OutboxRecord): Record<string, unknown> {
  const delivery: Record<string, unknown> = { state: record.state, attempts: record.attempts };
  if (record.lastError !== undefined) delivery.lastError = record.lastError;
  return delivery;
}
