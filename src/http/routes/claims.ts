import type Koa from 'koa';
import type Router from '@koa/router';
import { type ErrorCode, RequestError } from '../../core/errors.js';
import { outputJson } from '../../events/output.js';
import { parseJson, readRawBody } from '../body.js';
import type { ClaimsPort, HttpPorts } from '../ports.js';
import { numericParam } from '../query.js';

/** Longest wait a poll may ask (`waitMs`), and its default. */
const MAX_WAIT_MS = 60_000;
const DEFAULT_WAIT_MS = 30_000;
/** Most claims one poll takes (`max`). */
const MAX_CLAIMS = 100;
/** Longest wait a nack may ask before its output is offered again: a day. */
const MAX_RETRY_AFTER_MS = 86_400_000;
/** Longest reason a nack may give (the dead letters list shows it); longer is cut. */
const MAX_ERROR_CHARS = 500;

/**
 * Agent workers pull outputs (docs/http.md, claims): a long poll hands out claims under a
 * lease, and each is acked, nacked or extended by its id, on any instance.
 */
export function claimRoutes(
  router: Router,
  requireToken: Koa.Middleware,
  ports: Pick<HttpPorts, 'config' | 'claims'>,
): void {
  const { config } = ports;
  const claims = (): ClaimsPort => {
    if (!ports.claims)
      throw new RequestError(
        'claims_not_configured',
        409,
        "Agent workers' claims are not configured (agent.claims / INTAKE_AGENT_CLAIMS_LEASE_MS); outputs are pushed to agent.url or read from /v1/events",
      );
    return ports.claims;
  };
  const bodyOf = async (ctx: Koa.Context): Promise<Record<string, unknown>> => {
    const raw = await readRawBody(ctx.req, config.server.bodyLimitBytes);
    if (raw.length === 0) return {};
    const body = parseJson(raw, config.server.maxDepth, config.server.maxKeys);
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new RequestError('bad_shape', 400, 'The body is empty or a JSON object');
    return body as Record<string, unknown>;
  };

  router.post('/v1/claims', requireToken, async (ctx) => {
    const port = claims();
    const max = wholeParam(ctx, 'max', 'bad_max', 1, MAX_CLAIMS) ?? 1;
    const waitMs = wholeParam(ctx, 'waitMs', 'bad_wait', 0, MAX_WAIT_MS) ?? DEFAULT_WAIT_MS;
    // A client that goes away while its poll waits takes nothing with it.
    const gone = new AbortController();
    const onClose = () => gone.abort();
    ctx.res.once('close', onClose);
    try {
      const taken = await port.take(max, waitMs, gone.signal);
      if (taken.length === 0) {
        ctx.status = 204;
        return;
      }
      // Each output as the push sends it and SSE carries it, spliced in without parsing it again.
      const items = taken.map(
        (claim) =>
          `{"id":${JSON.stringify(claim.id)},"output":${outputJson(claim.record)},"attempt":${claim.attempt},"leaseUntil":${claim.leaseUntil}}`,
      );
      ctx.type = 'application/json';
      ctx.body = `{"claims":[${items.join(',')}]}`;
    } finally {
      ctx.res.off('close', onClose);
    }
  });

  router.post('/v1/claims/:id/ack', requireToken, async (ctx) => {
    const port = claims();
    const { turn, ...rest } = await bodyOf(ctx);
    if (Object.keys(rest).length > 0 || (turn !== undefined && turn !== 'open' && turn !== 'done'))
      throw new RequestError(
        'bad_shape',
        400,
        'The body of an ack is empty or {"turn": "open"} (keep the output\'s agent turn open) or {"turn": "done"}',
      );
    const acked = await port.ack(ctx.params.id as string, turn === 'open');
    ctx.body = acked.already ? { acked: true, already: true } : { acked: true };
  });

  router.post('/v1/claims/:id/nack', requireToken, async (ctx) => {
    const port = claims();
    const { retryAfterMs, error, ...rest } = await bodyOf(ctx);
    const shape = `The body of a nack is empty or {"retryAfterMs"?: 0 to ${MAX_RETRY_AFTER_MS}, "error"?: a reason}`;
    if (Object.keys(rest).length > 0 || (error !== undefined && typeof error !== 'string'))
      throw new RequestError('bad_retry', 400, `${shape}; got ${JSON.stringify(Object.keys(rest)[0] ?? error)}`);
    if (
      retryAfterMs !== undefined &&
      (typeof retryAfterMs !== 'number' ||
        !Number.isInteger(retryAfterMs) ||
        retryAfterMs < 0 ||
        retryAfterMs > MAX_RETRY_AFTER_MS)
    )
      throw new RequestError('bad_retry', 400, `${shape}; got retryAfterMs ${JSON.stringify(retryAfterMs)}`);
    const request = {
      ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
      ...(error === undefined ? {} : { error: error.slice(0, MAX_ERROR_CHARS) }),
    };
    const nacked = await port.nack(ctx.params.id as string, request);
    ctx.body = { nacked: true, ...nacked };
  });

  router.post('/v1/claims/:id/extend', requireToken, async (ctx) => {
    const port = claims();
    const { leaseMs, ...rest } = await bodyOf(ctx);
    if (Object.keys(rest).length > 0 || typeof leaseMs !== 'number')
      throw new RequestError(
        'bad_lease',
        400,
        `The body of an extend is {"leaseMs": milliseconds from now}; got ${JSON.stringify(leaseMs ?? Object.keys(rest)[0] ?? null)}`,
      );
    ctx.body = await port.extend(ctx.params.id as string, leaseMs);
  });
}

/** A whole-number query parameter from `min` to `max`, or undefined when absent; else a 400 with `code`. */
function wholeParam(ctx: Koa.Context, name: string, code: ErrorCode, min: number, max: number): number | undefined {
  const expected = `a whole number from ${min} to ${max}`;
  const raw = numericParam(ctx, name, code, expected);
  if (raw === undefined) return undefined;
  const value = Number(raw);
  if (!/^\d{1,6}$/.test(raw) || value < min || value > max)
    throw new RequestError(code, 400, `${name} must be ${expected} (got "${raw.slice(0, 40)}")`);
  return value;
}
