import type Koa from 'koa';
import type Router from '@koa/router';
import { RequestError } from '../../core/errors.js';
import type { HttpPorts } from '../ports.js';
import { numericParam } from '../query.js';

/** Operating it: liveness and readiness, counters, Prometheus metrics, dead letters. */
export function operationRoutes(
  router: Router,
  requireToken: Koa.Middleware,
  ports: Pick<HttpPorts, 'readiness' | 'stats' | 'metrics' | 'deadLetters'>,
): void {
  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  router.get('/readyz', async (ctx) => {
    const problems = await ports.readiness();
    ctx.status = problems.length === 0 ? 200 : 503;
    ctx.body = { ready: problems.length === 0, problems };
  });

  router.get('/v1/stats', requireToken, async (ctx) => {
    ctx.body = await ports.stats();
  });

  router.get('/metrics', requireToken, async (ctx) => {
    ctx.type = ports.metrics.contentType;
    ctx.body = await ports.metrics.metrics();
  });

  const deadLetters = () => {
    if (!ports.deadLetters)
      throw new RequestError(
        'push_not_configured',
        409,
        'Delivery to the agent is not configured (agent.url / INTAKE_AGENT_URL, or agent.claims for workers that claim outputs)',
      );
    return ports.deadLetters;
  };

  router.get('/v1/deadletters', requireToken, async (ctx) => {
    const limit = limitOf(ctx, 100);
    if (!ports.deadLetters) {
      ctx.body = { count: 0, deadletters: [] };
      return;
    }
    const [count, records] = await Promise.all([ports.deadLetters.count(), ports.deadLetters.list(limit)]);
    ctx.body = {
      count,
      deadletters: records.map((r) => ({
        id: r.id,
        seq: r.seq,
        type: r.type,
        sessionKey: r.sessionKey,
        channel: r.channel,
        attempts: r.attempts,
        lastError: r.lastError ?? null,
        failedAt: r.updatedAt,
      })),
    };
  });

  router.post('/v1/deadletters/retry', requireToken, async (ctx) => {
    ctx.body = { requeued: await deadLetters().retry(undefined, limitOf(ctx, MAX_LIST)) };
  });

  router.post('/v1/deadletters/:id/retry', requireToken, async (ctx) => {
    const requeued = await deadLetters().retry(ctx.params.id as string, 1);
    if (requeued === 0) throw new RequestError('not_found', 404, `No dead letter "${ctx.params.id}"`);
    ctx.body = { requeued };
  });
}

const MAX_LIST = 1000;

/** `?limit=`: a positive integer up to 1000, else a 400 naming what is allowed. */
function limitOf(ctx: Koa.Context, fallback: number): number {
  const expected = `an integer from 1 to ${MAX_LIST}`;
  const raw = numericParam(ctx, 'limit', 'bad_limit', expected);
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!/^\d{1,4}$/.test(raw) || value < 1 || value > MAX_LIST) {
    throw new RequestError('bad_limit', 400, `limit must be ${expected} (got "${raw.slice(0, 40)}")`);
  }
  return value;
}
