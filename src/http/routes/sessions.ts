import type Koa from 'koa';
import type Router from '@koa/router';
import { RequestError } from '../../core/errors.js';
import type { HttpPorts } from '../ports.js';
import { parseJson, readRawBody } from '../body.js';
import { sessionKeyOf } from './conversations.js';

/**
 * A human taking a session over (contract §13), by hand: read it, start it (on a session
 * nothing was said in too: a person may answer first), end it. Every instance sees the same.
 */
export function sessionRoutes(
  router: Router,
  requireToken: Koa.Middleware,
  ports: Pick<HttpPorts, 'config' | 'takeovers'>,
): void {
  const { config } = ports;
  router.get('/v1/sessions/:sessionKey/takeover', requireToken, async (ctx) => {
    const sessionKey = sessionKeyOf(ctx);
    ctx.body = { sessionKey, takeover: (await ports.takeovers.view(sessionKey)) ?? null };
  });
  router.put('/v1/sessions/:sessionKey/takeover', requireToken, async (ctx) => {
    const sessionKey = sessionKeyOf(ctx);
    const raw = await readRawBody(ctx.req, config.server.bodyLimitBytes);
    const holdMs = holdOf(
      raw.length === 0 ? undefined : parseJson(raw, config.server.maxDepth, config.server.maxKeys),
      config.takeover.maxMs,
    );
    const takeover = await ports.takeovers.start(sessionKey, holdMs ?? config.takeover.holdMs);
    ctx.body = { sessionKey, takeover: { active: true, ...takeover } };
  });
  router.delete('/v1/sessions/:sessionKey/takeover', requireToken, async (ctx) => {
    const sessionKey = sessionKeyOf(ctx);
    const ended = await ports.takeovers.end(sessionKey);
    ctx.body = { sessionKey, takeover: null, ended: ended ?? null };
  });
}

/** `{"holdMs"?: 1..takeover.maxMs}`, or nothing: the configured hold. */
function holdOf(body: unknown, maxMs: number): number | undefined {
  if (body === undefined) return undefined;
  const shape = `The body is empty or {"holdMs": milliseconds, 1 to takeover.maxMs (${maxMs})}`;
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new RequestError('bad_shape', 400, shape);
  const keys = Object.keys(body);
  if (keys.some((key) => key !== 'holdMs'))
    throw new RequestError('bad_shape', 400, `${shape}; got "${keys[0]?.slice(0, 64)}"`);
  const { holdMs } = body as { holdMs?: unknown };
  if (holdMs === undefined) return undefined;
  if (typeof holdMs !== 'number' || !Number.isInteger(holdMs) || holdMs < 1 || holdMs > maxMs) {
    throw new RequestError('bad_hold', 400, `${shape}; got ${JSON.stringify(holdMs)?.slice(0, 64)}`);
  }
  return holdMs;
}
