import Koa from 'koa';
import compose from 'koa-compose';
import Router from '@koa/router';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { RequestError } from '../core/errors.js';
import { outputOf } from '../events/output.js';
import { type OutboxRecord, type TurnDone, type TurnView } from '../core/ports/index.js';
import { type PlatformReply, type RawDelivery } from '../events/transport.js';
import type { ConnectionView } from '../events/connection.js';
import { type TraceTrail } from '../events/trace.js';
import { parseJson, readRawBody, tooLarge } from './body.js';
import { errorResponder } from './errors.js';
import { apiGuard } from './guard.js';
import { numericParam } from './query.js';
import type { Outbox } from '../core/ports/index.js';
import type { StreamHub } from './event-stream.js';

/** The narrow ports the HTTP surface talks to; the composition (src/service/intake.ts) provides them. */
export interface HttpPorts {
  config: Config;
  logger: Logger;
  now(): number;
  /** The configured channels, as a webhook URL meets them. */
  channels: WebhookChannels;
  /** The pipeline's `inbound`: verify, normalize and record one delivery; resolves once everything in it is recorded. */
  ingest(channel: string, delivery: RawDelivery): Promise<PlatformReply>;
  /** Count and log a delivery refused before it reached the pipeline (its type, its size). */
  rejected(channel: string, error: unknown): void;
  /** Reasons the service should not get traffic now (empty when ready). */
  readiness(): Promise<string[]>;
  stats(): Promise<Record<string, unknown>>;
  metrics: { readonly contentType: string; metrics(): Promise<string> };
  /** The store's outbox role: streams, lookup by id. */
  outbox: Outbox;
  streams: StreamHub;
  /** The bot connections: the deployment's (`GET /v1/connections`), and actions through them. */
  sockets: {
    list(): Promise<ConnectionView[]>;
    /** Run an action through a connected bot; resolves with its answer (`POST /v1/channels/:id/actions/:action`). */
    action(channel: string, action: string, params: Record<string, unknown>, selfId: string | undefined): Promise<unknown>;
  };
  /** The verdict trail (`/v1/activity`): this process's, or every instance's on a shared store. */
  trail: Pick<TraceTrail, 'shared' | 'life' | 'last' | 'after' | 'subscribe'>;
  /** What happened to one message (undefined: nothing known). */
  trace(id: string): Promise<object | undefined>;
  /** Dead letters, when push to the agent is configured. */
  deadLetters: {
    count(): Promise<number>;
    list(limit: number): Promise<OutboxRecord[]>;
    retry(id: string | undefined, limit: number): Promise<number>;
  } | undefined;
  /** Agent turns (docs/turns.md): close one by its output id, read a session's. */
  turns: {
    done(outputId: string): Promise<TurnDone>;
    of(sessionKey: string): Promise<TurnView>;
  };
  /** Extra routes (the operator console), mounted after the API. */
  extra?: (router: Router, requireToken: Koa.Middleware) => void;
}

/** What the webhook routes ask of the configured channels. */
export interface WebhookChannels {
  /** Whether a channel id is configured. */
  has(id: string): boolean;
  /** The body types a channel's webhook takes, for the 415 (`application/json`; WeChat's `text/xml`). */
  bodyTypes(id: string): { accepts(contentType: string | undefined): boolean; names: string };
  /** Answer a GET on a webhook URL (platform handshakes). */
  handshake(id: string, delivery: RawDelivery): PlatformReply;
}

/**
 * A delivery as received over HTTP. The query string is parsed on first read: only handshakes
 * read it, and a URLSearchParams per webhook is garbage on the hot path.
 */
class WebhookDelivery implements RawDelivery {
  private parsed: URLSearchParams | undefined;

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

/**
 * The HTTP surface (docs/http.md): webhooks in, output and operator views out.
 */
export function createApp(ports: HttpPorts): { app: Koa; mounted: Koa.Middleware; webhooks: Koa.Middleware } {
  const app = new Koa();
  app.proxy = false;
  // Koa reports errors that escaped the responder (a client gone mid-stream) here.
  app.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'ERR_STREAM_PREMATURE_CLOSE' || error.code === 'ECONNRESET' || error.code === 'EPIPE') return;
    ports.logger.error({ err: error }, 'http error');
  });
  const router = new Router();
  const { config } = ports;
  const deliveryOf = (ctx: Koa.Context, body: Buffer): RawDelivery => new WebhookDelivery(ctx.headers, body, ctx.querystring, ports.now());
  const unknownChannel = (id: string) => new RequestError('unknown_channel', 404, `No channel "${id}" is configured (see "channels" in the configuration)`, { channel: id });

  /** The webhook route, matched before the router: it is the hot path. */
  const webhook: Koa.Middleware = async (ctx, next) => {
    if (ctx.method !== 'POST' || !ctx.path.startsWith('/webhooks/')) return next();
    const raw = ctx.path.slice('/webhooks/'.length);
    if (raw.includes('/')) return next();
    let channelId: string;
    try {
      channelId = decodeURIComponent(raw);
    } catch {
      throw unknownChannel(raw);
    }
    let body: Buffer;
    try {
      if (!ports.channels.has(channelId)) throw unknownChannel(channelId);
      const contentType = ctx.headers['content-type'];
      const types = ports.channels.bodyTypes(channelId);
      if (!types.accepts(contentType)) {
        throw new RequestError('unsupported_media_type', 415, `Content-Type must be ${types.names} (got "${contentType || 'none'}")`, { channel: channelId });
      }
      body = ctx.req.readableEnded ? bodyReadAhead(ctx, config.server.bodyLimitBytes) : await readRawBody(ctx.req, config.server.bodyLimitBytes);
    } catch (error) {
      ports.rejected(channelId, error);
      throw error;
    }
    // The pipeline's `inbound` counts and trails what it refuses itself.
    answer(ctx, await ports.ingest(channelId, deliveryOf(ctx, body)));
  };

  const hooks = new Router();
  hooks.get('/webhooks/:channel', async (ctx) => {
    const channelId = ctx.params.channel as string;
    if (!ports.channels.has(channelId)) throw unknownChannel(channelId);
    answer(ctx, ports.channels.handshake(channelId, deliveryOf(ctx, Buffer.alloc(0))));
  });

  router.get('/healthz', (ctx) => {
    ctx.body = { ok: true };
  });

  router.get('/readyz', async (ctx) => {
    const problems = await ports.readiness();
    ctx.status = problems.length === 0 ? 200 : 503;
    ctx.body = { ready: problems.length === 0, problems };
  });

  // The operator API's guard: the bearer token, and without one the browser checks (guard.ts).
  const requireToken = apiGuard(config.server);

  router.get('/v1/events', requireToken, ports.streams.events(ports.outbox));
  router.get('/v1/activity', requireToken, ports.streams.activityStream(ports.trail));

  router.get('/v1/events/:id', requireToken, async (ctx) => {
    const record = await ports.outbox.outboxGet(ctx.params.id as string);
    if (!record) throw new RequestError('not_found', 404, `No event "${ctx.params.id}" is retained (unknown, or older than events.retentionMs)`);
    ctx.body = { event: outputOf(record), delivery: deliveryOf1(record) };
  });

  router.get('/v1/trace/:id', requireToken, async (ctx) => {
    const trace = await ports.trace(ctx.params.id as string);
    if (!trace) {
      const seenBy = ports.trail.shared ? 'any instance on this store' : 'this process';
      throw new RequestError('not_found', 404, `Nothing is known of "${ctx.params.id}": not a platform id, ingest id or output id seen by ${seenBy} within trace.retentionMs, nor a retained output`);
    }
    ctx.body = trace;
  });

  // Agent turns: any instance closes a turn, whichever holds its messages (the store is shared).
  router.post('/v1/turns/:id/done', requireToken, async (ctx) => {
    const id = ctx.params.id as string;
    if (id.length > 128) throw new RequestError('bad_id', 400, 'An output id is at most 128 characters (ours are 21)');
    const done = await ports.turns.done(id);
    if (done.result === 'unknown') throw new RequestError('turn_unknown', 404, `No output "${id}" is known (never emitted, or older than events.retentionMs): there is no turn of it to close`);
    ctx.body = done.result === 'closed'
      ? { closed: true, sessionKey: done.sessionKey, released: done.held }
      : { closed: false, already: true, sessionKey: done.sessionKey };
  });
  router.get('/v1/sessions/:sessionKey/turn', requireToken, async (ctx) => {
    const view = await ports.turns.of(ctx.params.sessionKey as string);
    ctx.body = view.open
      ? { open: true, outputId: view.outputId, openedAt: view.openedAt, until: view.until, held: view.held }
      : { open: false, held: view.held };
  });

  router.get('/v1/connections', requireToken, async (ctx) => {
    ctx.body = { connections: await ports.sockets.list() };
  });
  router.post('/v1/channels/:channel/actions/:action', requireToken, async (ctx) => {
    const channelId = ctx.params.channel as string;
    const action = ctx.params.action as string;
    if (!ports.channels.has(channelId)) throw unknownChannel(channelId);
    if (!/^[A-Za-z_][\w.]{0,63}$/.test(action)) throw new RequestError('bad_action', 400, `Action names are letters, digits, "_" and "." (up to 64), like send_group_msg; got "${action.slice(0, 64)}"`);
    const raw = await readRawBody(ctx.req, config.server.bodyLimitBytes);
    const params = raw.length === 0 ? {} : parseJson(raw, config.server.maxDepth, config.server.maxKeys);
    if (typeof params !== 'object' || params === null || Array.isArray(params)) throw new RequestError('bad_shape', 400, 'The body of an action is its params: a JSON object (or empty)');
    const selfId = ctx.query.self_id;
    ctx.body = await ports.sockets.action(channelId, action, params as Record<string, unknown>, typeof selfId === 'string' && selfId !== '' ? selfId : undefined);
  });
  router.get('/v1/stats', requireToken, async (ctx) => {
    ctx.body = await ports.stats();
  });

  router.get('/metrics', requireToken, async (ctx) => {
    ctx.type = ports.metrics.contentType;
    ctx.body = await ports.metrics.metrics();
  });

  const deadLetters = () => {
    if (!ports.deadLetters) throw new RequestError('push_not_configured', 409, 'Delivery to the agent is not configured (agent.url / INTAKE_AGENT_URL)');
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
      deadletters: records.map((r) => ({ id: r.id, seq: r.seq, type: r.type, sessionKey: r.sessionKey, channel: r.channel, attempts: r.attempts, lastError: r.lastError ?? null, failedAt: r.updatedAt })),
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

  ports.extra?.(router, requireToken);

  const responder = errorResponder(ports.logger);
  const everything = [responder, webhook, hooks.routes(), router.routes(), router.allowedMethods()] as Koa.Middleware[];
  for (const middleware of everything) app.use(middleware);
  app.use((ctx) => {
    throw new RequestError('not_found', 404, `No route for ${ctx.method} ${ctx.path}`);
  });
  return { app, mounted: passing(everything), webhooks: passing([responder, webhook, hooks.routes()] as Koa.Middleware[]) };
}

/**
 * A chain mounted inside another Koa app: a request none of its routes takes goes on to the
 * app's next middleware (no 404 of ours), and errors of the app's own middleware are not ours.
 */
function passing(chain: Koa.Middleware[]): Koa.Middleware {
  const composed = compose(chain);
  return async (ctx, next) => {
    let unmatched = false;
    await composed(ctx, async () => { unmatched = true; });
    if (unmatched) await next();
  };
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
  throw new RequestError('body_already_read', 500, 'A body parser mounted before agent-intake read this request and kept no raw body, so its signature cannot be checked: mount intake.middleware() (or intake.webhooks()) before the body parser, or have the parser keep ctx.request.rawBody');
}

function deliveryOf1(record: OutboxRecord): Record<string, unknown> {
  const delivery: Record<string, unknown> = { state: record.state, attempts: record.attempts };
  if (record.lastError !== undefined) delivery.lastError = record.lastError;
  return delivery;
}
