import type Koa from 'koa';
import type Router from '@koa/router';
import { RequestError } from '../../core/errors.js';
import type { HttpPorts } from '../ports.js';
import { parseJson, readRawBody } from '../body.js';
import { unknownChannel } from './webhooks.js';

/** The bots: their connections (`/v1/connections`) and actions through them. */
export function botRoutes(
  router: Router,
  requireToken: Koa.Middleware,
  ports: Pick<HttpPorts, 'config' | 'channels' | 'sockets'>,
): void {
  const { config } = ports;
  router.get('/v1/connections', requireToken, async (ctx) => {
    ctx.body = { connections: await ports.sockets.list() };
  });
  router.post('/v1/channels/:channel/actions/:action', requireToken, async (ctx) => {
    const channelId = ctx.params.channel as string;
    const action = ctx.params.action as string;
    if (!ports.channels.has(channelId)) throw unknownChannel(channelId);
    if (!/^[A-Za-z_][\w.]{0,63}$/.test(action))
      throw new RequestError(
        'bad_action',
        400,
        `Action names are letters, digits, "_" and "." (up to 64), like send_group_msg; got "${action.slice(0, 64)}"`,
      );
    const raw = await readRawBody(ctx.req, config.server.bodyLimitBytes);
    const params = raw.length === 0 ? {} : parseJson(raw, config.server.maxDepth, config.server.maxKeys);
    if (typeof params !== 'object' || params === null || Array.isArray(params))
      throw new RequestError('bad_shape', 400, 'The body of an action is its params: a JSON object (or empty)');
    const selfId = ctx.query.self_id;
    ctx.body = await ports.sockets.action(
      channelId,
      action,
      params as Record<string, unknown>,
      typeof selfId === 'string' && selfId !== '' ? selfId : undefined,
    );
  });
}
