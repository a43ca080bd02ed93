import Koa from 'koa';
import compose from 'koa-compose';
import Router from '@koa/router';
import { RequestError } from '../core/errors.js';
import { errorResponder } from './errors.js';
import type { HttpPorts } from './ports.js';
import { apiGuard } from './guard.js';
import { botRoutes } from './routes/bots.js';
import { claimRoutes } from './routes/claims.js';
import { conversationRoutes } from './routes/conversations.js';
import { sessionRoutes } from './routes/sessions.js';
import { operationRoutes } from './routes/operations.js';
import { outputRoutes } from './routes/outputs.js';
import { webhookRoutes } from './routes/webhooks.js';

export type { HttpPorts, WebhookChannels } from './ports.js';

/**
 * The HTTP surface (docs/http.md): webhooks in, output and operator views out, one router per
 * resource under the operator API's guard.
 */
export function createApp(ports: HttpPorts): { app: Koa; mounted: Koa.Middleware; webhooks: Koa.Middleware } {
  const app = new Koa();
  app.proxy = false;
  // Koa reports errors that escaped the responder (a client gone mid-stream) here.
  app.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
    ports.logger.error({ err: error }, 'http error');
  });
  const { webhook, handshakes } = webhookRoutes(ports);
  // The operator API's guard: the bearer token, and without one the browser checks (guard.ts).
  const requireToken = apiGuard(ports.config.server);
  const router = new Router();
  operationRoutes(router, requireToken, ports);
  outputRoutes(router, requireToken, ports);
  claimRoutes(router, requireToken, ports);
  botRoutes(router, requireToken, ports);
  conversationRoutes(router, requireToken, ports);
  sessionRoutes(router, requireToken, ports);
  ports.extra?.(router, requireToken);

  const responder = errorResponder(ports.logger);
  const everything = [responder, webhook, handshakes, router.routes(), router.allowedMethods()] as Koa.Middleware[];
  for (const middleware of everything) app.use(middleware);
  app.use((ctx) => {
    throw new RequestError('not_found', 404, `No route for ${ctx.method} ${ctx.path}`);
  });
  return { app, mounted: passing(everything), webhooks: passing([responder, webhook, handshakes]) };
}

/**
 * A chain mounted inside another Koa app: a request none of its routes takes goes on to the
 * app's next middleware (no 404 of ours), and errors of the app's own middleware are not ours.
 */
function passing(chain: Koa.Middleware[]): Koa.Middleware {
  const composed = compose(chain);
  return async (ctx, next) => {
    let unmatched = false;
    await composed(ctx, async () => {
      unmatched = true;
    });
    if (unmatched) await next();
  };
}
