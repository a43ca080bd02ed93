import Koa from 'koa';
import Router from 'koa-router';
import type { RawDelivery } from '../adapters/types.js';
import type { IngestResult, Pipeline } from '../pipeline.js';
import { RequestError } from '../errors.js';
import { safeEqual } from '../signing.js';
import { isJsonType, readRawBody } from './body.js';
import { errorResponder } from './errors.js';
import { eventStream } from './event-stream.js';
import { outputOf } from '../emit/output.js';

/** Send what the pipeline or a platform convention answered. */
function answer(ctx: Koa.Context, result: IngestResult): void {
  ctx.status = result.status;
  if (result.contentType) ctx.type = result.contentType;
  if (result.body !== undefined) ctx.body = result.body;
}

/**
 * The HTTP surface of CONTRACT §3: webhooks in, output and operator views out.
 */
export function createApp(pipeline: Pipeline): Koa {
  const app = new Koa();
  app.proxy = false;
  // Koa reports errors that escaped the responder (a client gone mid-stream) here.
  app.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
    pipeline.logger.error({ err: error }, 'http error');
  });
  const router = new Router();
  const { config } = pipeline;
  const deliveryOf = (ctx: Koa.Context, body: Buffer): RawDelivery =>
    ({ headers: ctx.headers, body, query: new URLSearchParams(ctx.querystring), now: pipeline.clock.now() });

  router.post('/webhooks/:channel', async (ctx) => {
    const channelId = ctx.params.channel as string;
    try {
      pipeline.channelOf(channelId);
      if (!isJsonType(ctx.get('content-type'))) {
        throw new RequestError('unsupported_media_type', 415, `Content-Type must be application/json (got "${ctx.get('content-type') || 'none'}")`, { channel: channelId });
      }
      const body = await readRawBody(ctx.req, config.server.bodyLimitBytes);
      answer(ctx, await pipeline.ingest(channelId, deliveryOf(ctx, body)));
    } catch (error) {
      pipeline.rejected(channelId, error);
      throw error;
    }
  });

  router.get('/webhooks/:channel', async (ctx) => {
    answer(ctx, pipeline.handshake(ctx.params.channel as string, deliveryOf(ctx, Buffer.alloc(0))));
  });

  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  router.get('/readyz', async (ctx) => {
    const problems: string[] = [];
    if (pipeline.isClosing) problems.push('shutting down');
    try {
      await pipeline.store.ping();
    } catch (error) {
      problems.push(`store unreachable: ${(error as Error).message}`);
    }
    problems.push(...pipeline.readinessProblems());
    ctx.status = problems.length === 0 ? 200 : 503;
    ctx.body = { ready: problems.length === 0, problems };
  });

  const requireToken: Koa.Middleware = async (ctx, next) => {
    const token = config.server.apiToken;
    if (token && !safeEqual(ctx.get('authorization'), `Bearer ${token}`)) {
      ctx.set('WWW-Authenticate', 'Bearer');
      throw new RequestError('unauthorized', 401, 'This endpoint needs Authorization: Bearer <server.apiToken>');
    }
    await next();
  };

  router.get('/v1/events', requireToken, eventStream(pipeline));

  router.get('/v1/events/:id', requireToken, async (ctx) => {
    const record = await pipeline.store.outboxGet(ctx.params.id as string);
    if (!record) throw new RequestError('not_found', 404, `No event "${ctx.params.id}" is retained (unknown, or older than events.retentionMs)`);
    const delivery: Record<string, unknown> = { state: record.state, attempts: record.attempts };
    if (record.lastError !== undefined) delivery.lastError = record.lastError;
    ctx.body = { event: outputOf(record), delivery };
  });

  router.get('/v1/stats', requireToken, async (ctx) => {
    ctx.body = await pipeline.stats();
  });

  router.get('/metrics', requireToken, async (ctx) => {
    ctx.type = pipeline.metrics.registry.contentType;
    ctx.body = await pipeline.metrics.registry.metrics();
  });

  router.get('/v1/deadletters', requireToken, async (ctx) => {
    const limit = Math.min(Number(ctx.query.limit ?? 100) || 100, 1000);
    const records = await pipeline.store.deadLetters(limit);
    ctx.body = {
      count: pipeline.push?.dead ?? records.length,
      deadletters: records.map((r) => ({ id: r.id, seq: r.seq, type: r.type, sessionKey: r.sessionKey, channel: r.channel, attempts: r.attempts, lastError: r.lastError ?? null, failedAt: r.updatedAt })),
    };
  });

  const requirePush = () => {
    if (!pipeline.push) throw new RequestError('push_not_configured', 409, 'Delivery to the agent is not configured (agent.url / INTAKE_AGENT_URL)');
    return pipeline.push;
  };

  router.post('/v1/deadletters/retry', requireToken, async (ctx) => {
    ctx.body = { requeued: await requirePush().retryDead() };
  });

  router.post('/v1/deadletters/:id/retry', requireToken, async (ctx) => {
    const requeued = await requirePush().retryDead(ctx.params.id as string);
    if (requeued === 0) throw new RequestError('not_found', 404, `No dead letter "${ctx.params.id}"`);
    ctx.body = { requeued };
  });

  app.use(errorResponder(pipeline.logger));
  app.use(router.routes());
  app.use(router.allowedMethods());
  app.use((ctx) => {
    throw new RequestError('not_found', 404, `No route for ${ctx.method} ${ctx.path}`);
  });
  return app;
}
