import type Koa from 'koa';
import type Router from '@koa/router';
import { RequestError } from '../../core/errors.js';
import type { HttpPorts } from '../ports.js';
import { parseJson, readRawBody } from '../body.js';

const MODES = ['always', 'mention', 'never'];

/** Conversations (contract §12): a session's activation override, set at run time for every instance. */
export function conversationRoutes(
  router: Router,
  requireToken: Koa.Middleware,
  ports: Pick<HttpPorts, 'config' | 'conversations'>,
): void {
  const { config } = ports;
  router.get('/v1/conversations/:sessionKey', requireToken, async (ctx) => {
    ctx.body = await ports.conversations.view(sessionKeyOf(ctx));
  });
  router.put('/v1/conversations/:sessionKey/activation', requireToken, async (ctx) => {
    const sessionKey = sessionKeyOf(ctx);
    const raw = await readRawBody(ctx.req, config.server.bodyLimitBytes);
    const modes = overrideOf(
      raw.length === 0 ? undefined : parseJson(raw, config.server.maxDepth, config.server.maxKeys),
    );
    await ports.conversations.setActivation(sessionKey, modes);
    ctx.body = { sessionKey, activation: modes };
  });
  router.delete('/v1/conversations/:sessionKey/activation', requireToken, async (ctx) => {
    const sessionKey = sessionKeyOf(ctx);
    await ports.conversations.setActivation(sessionKey, undefined);
    ctx.body = { sessionKey, activation: null };
  });
}

/** A session key as outputs carry it (URL-encoded in the path): 1-512 characters, no control characters. */
export function sessionKeyOf(ctx: Koa.Context): string {
  const key = ctx.params.sessionKey ?? '';
  // The router keeps a segment it cannot decode (`%ED%A0%80`, `%FF`: not UTF-8) as its raw text,
  // which would set an override under a key no conversation has.
  if (!decodes(/\/v1\/(?:conversations|sessions)\/([^/]*)/.exec(ctx.path)?.[1] ?? '')) {
    throw new RequestError(
      'bad_session_key',
      400,
      'A session key is UTF-8 text, URL-encoded in the path; got bytes that are not',
    );
  }
  // eslint-disable-next-line no-control-regex
  if (key.length === 0 || key.length > 512 || /[\u0000-\u001f\u007f]/.test(key)) {
    throw new RequestError(
      'bad_session_key',
      400,
      `A session key is 1 to 512 characters without control characters, URL-encoded in the path (qq%3Agroup%3A123); got ${key.length} characters`,
    );
  }
  return key;
}

function decodes(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

/** `{"group"?: mode, "private"?: mode}`, at least one, nothing else. */
function overrideOf(body: unknown): { group?: Mode; private?: Mode } {
  const shape =
    'The body is {"group": mode, "private": mode} (either or both), each mode "always", "mention" or "never"';
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new RequestError('bad_shape', 400, shape);
  const out: { group?: Mode; private?: Mode } = {};
  for (const [key, value] of Object.entries(body)) {
    if (key !== 'group' && key !== 'private')
      throw new RequestError('bad_shape', 400, `${shape}; got key "${key.slice(0, 64)}"`);
    if (typeof value !== 'string' || !MODES.includes(value)) {
      throw new RequestError(
        'bad_mode',
        400,
        `"${key}" must be "always", "mention" or "never"; got ${JSON.stringify(value)?.slice(0, 64)}`,
      );
    }
    out[key] = value as Mode;
  }
  if (out.group === undefined && out.private === undefined) throw new RequestError('bad_shape', 400, shape);
  return out;
}

type Mode = 'always' | 'mention' | 'never';
