import type Koa from 'koa';
import Router from '@koa/router';
import { isIntakeError, RequestError } from '../../core/errors.js';
import type { PlatformReply, RawDelivery } from '../../events/transport.js';
import type { HttpPorts } from '../ports.js';
import { readRawBody, tooLarge } from '../body.js';

/**
 * A delivery as received over HTTP. The query string is parsed on first read: only handshakes
 * read it, and a URLSearchParams per webhook is garbage on the hot path.
 */
class WebhookDelivery implements RawDelivery {
  private parsed: URLSearchParams | undefined;
  path?: string;

  constructor(
    readonly headers: Koa.Context['headers'],
    readonly body: Buffer,
    private readonly querystring: string,
    readonly now: number,
  ) {}

  get query(): URLSearchParams {
    return (this.parsed ??= new URLSearchParams(this.querystring));
  }
}

/** Send what the pipeline or a platform convention answered. */
function answer(ctx: Koa.Context, result: PlatformReply): void {
  ctx.status = result.status;
  if (result.headers) ctx.set(result.headers);
  if (result.contentType) ctx.type = result.contentType;
  else if (result.body !== null && typeof result.body === 'object' && !Buffer.isBuffer(result.body)) {
    // A JSON answer goes out as its text, with its type named here. Given the object, Koa would
    // read the type back and test it against a pattern to decide on JSON, then stringify it
    // anyway, splitting the header it had just been given.
    ctx.set('Content-Type', JSON_TYPE);
    ctx.body = JSON.stringify(result.body);
    return;
  }
  if (result.body !== undefined) ctx.body = result.body;
}

const JSON_TYPE = 'application/json; charset=utf-8';

/** The 404 of a channel id no channel has. */
export function unknownChannel(id: string): RequestError {
  return new RequestError(
    'unknown_channel',
    404,
    `No channel "${id}" is configured (see "channels" in the configuration)`,
    { channel: id },
  );
}

/**
 * The channel id of a webhook path's segment. Only a `%` escape changes under
 * decodeURIComponent (ECMA-262 §19.2.6.2), and the call into V8's runtime costs more than the
 * rest of the routing, so an id without one (nearly every webhook) is taken as it is.
 */
function channelIdOf(segment: string): string {
  return segment.includes('%') ? decodeURIComponent(segment) : segment;
}

/** A delivery of this request, with the body as read (and the path under the webhook URL it came to). */
export function deliveryOf(ports: Pick<HttpPorts, 'now'>, ctx: Koa.Context, body: Buffer, path?: string): RawDelivery {
  const delivery = new WebhookDelivery(ctx.headers, body, ctx.querystring, ports.now());
  if (path !== undefined) delivery.path = path;
  return delivery;
}

/**
 * The webhook routes: `POST /webhooks/:channel`, matched before any router (it is the hot
 * path), and `GET /webhooks/:channel`, the platforms' handshakes.
 */
export function webhookRoutes(ports: Pick<HttpPorts, 'config' | 'now' | 'channels' | 'ingest' | 'rejected'>): {
  webhook: Koa.Middleware;
  handshakes: Koa.Middleware;
} {
  const { config } = ports;
  /** The verified-later bytes of a delivery to a configured channel, within the body limit; refusals counted. */
  async function receive(ctx: Koa.Context, channelId: string): Promise<Buffer> {
    try {
      if (!ports.channels.has(channelId)) throw unknownChannel(channelId);
      const contentType = ctx.headers['content-type'];
      const types = ports.channels.bodyTypes(channelId);
      if (!types.accepts(contentType)) {
        throw new RequestError(
          'unsupported_media_type',
          415,
          `Content-Type must be ${types.names} (got "${contentType || 'none'}")`,
          { channel: channelId },
        );
      }
      return ctx.req.readableEnded
        ? bodyReadAhead(ctx, config.server.bodyLimitBytes)
        : await readRawBody(ctx.req, config.server.bodyLimitBytes);
    } catch (error) {
      ports.rejected(channelId, error);
      throw error;
    }
  }

  /**
   * A request under a channel's webhook URL that its adapter takes (Matrix transactions:
   * `PUT /webhooks/<id>/_matrix/app/v1/transactions/<txnId>`), answered the platform's way
   * when refused; any other path under a webhook URL goes on to the routers (a 404).
   */
  async function underWebhook(ctx: Koa.Context, next: Koa.Next, raw: string, path: string): Promise<unknown> {
    let channelId: string;
    try {
      channelId = channelIdOf(raw);
    } catch {
      return next();
    }
    const route = ports.channels.has(channelId) ? ports.channels.webhookPath?.(channelId, ctx.method, path) : undefined;
    if (!route) return next();
    try {
      const body = await receive(ctx, channelId);
      answer(ctx, await ports.ingest(channelId, deliveryOf(ports, ctx, body, path)));
    } catch (error) {
      const reply = isIntakeError(error) ? route.refusal(error) : undefined;
      if (!reply) throw error;
      answer(ctx, reply);
    }
    return undefined;
  }

  const webhook: Koa.Middleware = async (ctx, next) => {
    const path = ctx.path;
    if (!path.startsWith('/webhooks/')) return next();
    const raw = path.slice('/webhooks/'.length);
    const slash = raw.indexOf('/');
    if (slash !== -1) return underWebhook(ctx, next, raw.slice(0, slash), raw.slice(slash));
    if (ctx.method !== 'POST') return next();
    let channelId: string;
    try {
      channelId = channelIdOf(raw);
    } catch {
      throw unknownChannel(raw);
    }
    const body = await receive(ctx, channelId);
    // The pipeline's `inbound` counts and trails what it refuses itself.
    answer(ctx, await ports.ingest(channelId, deliveryOf(ports, ctx, body)));
  };

  const hooks = new Router();
  hooks.get('/webhooks/:channel', async (ctx) => {
    const channelId = ctx.params.channel as string;
    if (!ports.channels.has(channelId)) throw unknownChannel(channelId);
    answer(ctx, ports.channels.handshake(channelId, deliveryOf(ports, ctx, Buffer.alloc(0))));
  });

  return { webhook, handshakes: hooks.routes() as Koa.Middleware };
}

/**
 * The body of a webhook whose stream an app's body parser read before us: its raw copy
 * (`ctx.request.rawBody`, kept by koa-bodyparser and @koa/bodyparser), as received; without
 * one the signature cannot be checked, so the answer says how to mount us instead.
 */
function bodyReadAhead(ctx: Koa.Context, limit: number): Buffer {
  const raw = (ctx.request as { rawBody?: unknown }).rawBody;
  if (typeof raw === 'string' || Buffer.isBuffer(raw)) {
    const body = Buffer.isBuffer(raw) ? raw : Buffer.from(raw, 'utf8');
    if (body.length > limit) throw tooLarge(limit);
    return body;
  }
  throw new RequestError(
    'body_already_read',
    500,
    'A body parser mounted before agent-intake read this request and kept no raw body, so its signature cannot be checked: mount intake.middleware() (or intake.webhooks()) before the body parser, or have the parser keep ctx.request.rawBody',
  );
}
