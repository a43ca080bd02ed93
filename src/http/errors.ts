import type Koa from 'koa';
import type { Logger } from 'pino';
import { isIntakeError, UnavailableError } from '../core/errors.js';

/**
 * The one place errors become responses: `{ "error": { "code", "message" } }`. Intake errors
 * carry their status; anything else is a 500 whose details stay in the log.
 */
export function errorResponder(logger: Logger): Koa.Middleware {
  return async function errorResponder(ctx, next) {
    try {
      await next();
    } catch (error) {
      if (isIntakeError(error)) {
        ctx.status = error.status;
        ctx.body = { error: { code: error.code, message: error.message } };
        if (error instanceof UnavailableError) ctx.set('Retry-After', String(error.retryAfterSeconds));
        if (error.status === 413) ctx.set('Connection', 'close');
        return;
      }
      const status = (error as { status?: number }).status;
      if (typeof status === 'number' && status >= 400 && status < 500) {
        ctx.status = status;
        ctx.body = { error: { code: 'bad_request', message: (error as Error).message } };
        return;
      }
      logger.error({ err: error, path: ctx.path }, 'unhandled error');
      ctx.status = 500;
      ctx.body = { error: { code: 'internal', message: 'Internal error; see the service log' } };
    }
  };
}
