import type Koa from 'koa';
import type { Config } from '../config/schema.js';
import { RequestError } from '../core/errors.js';
import { safeEqual } from '../core/signing.js';

/** Methods that read; everything else changes something (a retry, a turn closed, an action sent). */
const READS = new Set(['GET', 'HEAD', 'OPTIONS']);
/** The body types a page on another site may send without a CORS preflight (Fetch standard, CORS-safelisted). */
const SIMPLE_TYPES = new Set(['application/x-www-form-urlencoded', 'multipart/form-data', 'text/plain']);
/**
 * `Authorization: Bearer <token>`: the scheme in any case and one or more spaces before one
 * token (RFC 7235 §2.1: `auth-scheme 1*SP token68`, schemes case-insensitive; RFC 6750 §2.1).
 */
const BEARER = /^bearer +(\S+) *$/i;

/**
 * The guard of the operator API (`/v1/*`, `/metrics`): every route of intake's own that holds
 * data or changes state takes it, and nothing else does (webhooks, socket upgrades, health,
 * the console's static page), so embedded in a host app (`intake.middleware()`) it guards
 * intake's routes only, never the app's.
 *
 * With `server.apiToken`, the bearer token is the protection: a page on another site can
 * neither know it nor send it without the browser asking us first (CORS), and we never say yes.
 * Without one (the default, on loopback), a browser on the same machine is the way in:
 * - DNS rebinding: a page on `evil.example` whose name now points at 127.0.0.1 reads the API as
 *   its own origin. Its requests carry `Host: evil.example`, so only loopback names, the listen
 *   host and `server.allowedHosts` are answered (also with a token, when that list is set).
 * - Cross-site requests: a page may POST here blind (`mode: "no-cors"`) and the change happens
 *   even though it cannot read the answer. A change is refused when its `Origin` is another
 *   site's, or when it carries no header such a page could not send without a preflight
 *   (`Content-Type: application/json`, `Authorization`, `X-Requested-With`): the console sends
 *   `X-Requested-With`, an agent's JSON call sends its content type.
 */
export function apiGuard(server: Config['server']): Koa.Middleware {
  const token = server.apiToken;
  const allowed = new Set(server.allowedHosts.map(hostName));
  const anyHost = allowed.has('*');
  const checkHost = !anyHost && (!token || allowed.size > 0);
  const listenHost = hostName(server.host);

  function hostAllowed(name: string): boolean {
    return isLoopbackName(name) || name === listenHost || allowed.has(name);
  }

  return async function apiGuard(ctx, next) {
    const host = ctx.get('host');
    if (checkHost && host !== '' && !hostAllowed(hostName(host))) {
      throw new RequestError(
        'host_not_allowed',
        403,
        `Host "${host.slice(0, 100)}" is not a name ${ctx.method} ${ctx.path} is answered for: ${token ? '' : 'without server.apiToken, '}only loopback names (localhost, 127.0.0.1, [::1]), server.host ("${server.host}") and the names in server.allowedHosts are, so a web page cannot reach the API through a DNS name of its own. If you reach the service by this name (a proxy, a tunnel), add "${hostName(host).slice(0, 100)}" to server.allowedHosts (INTAKE_ALLOWED_HOSTS)`,
      );
    }
    if (token) checkToken(ctx, token);
    else if (!READS.has(ctx.method)) {
      const origin = ctx.get('origin');
      if (origin !== '' && !sameSite(origin, host, allowed)) {
        throw new RequestError(
          'cross_origin',
          403,
          `${ctx.method} ${ctx.path} came from a page on ${origin.slice(0, 100)}, another origin than this service's: refused, so a web page cannot change anything here through your browser. Call it from the console or a program, or set server.apiToken and send it as a bearer token${origin === 'null' ? '' : `; or, if that page is yours, add its name to server.allowedHosts (INTAKE_ALLOWED_HOSTS)`}`,
        );
      }
      if (!ctx.get('authorization') && !ctx.get('x-requested-with') && !nonSimpleType(ctx.get('content-type'))) {
        throw new RequestError(
          'csrf_header_missing',
          403,
          `${ctx.method} ${ctx.path} without server.apiToken must carry a header a web page cannot send unasked: Content-Type: application/json, X-Requested-With (any value) or Authorization. This keeps pages on other sites from making the request through your browser`,
        );
      }
    }
    await next();
  };
}

/**
 * The bearer token, or a 401 that says which of the two went wrong: no token sent (`missing_token`:
 * a client not set up for the token) or one that is not the token (`bad_token`: a stale or mistyped
 * one, or another scheme). `WWW-Authenticate` names the scheme, with RFC 6750's error code when a
 * token was sent (§3.1: none when the request carried no credentials).
 */
function checkToken(ctx: Koa.Context, token: string): void {
  const header = ctx.get('authorization');
  if (header.trim() === '') {
    ctx.set('WWW-Authenticate', 'Bearer');
    throw new RequestError(
      'missing_token',
      401,
      `${ctx.method} ${ctx.path} needs the API token: send Authorization: Bearer <server.apiToken>`,
    );
  }
  const match = BEARER.exec(header);
  if (match && safeEqual(match[1] as string, token)) return;
  ctx.set('WWW-Authenticate', 'Bearer error="invalid_token"');
  // The header is not echoed: it may hold most of a token.
  throw new RequestError(
    'bad_token',
    401,
    match
      ? `${ctx.method} ${ctx.path}: the bearer token is not server.apiToken (INTAKE_API_TOKEN); send the token the service is configured with`
      : `${ctx.method} ${ctx.path}: Authorization must be "Bearer <server.apiToken>": the scheme Bearer (any case), a space, then the token alone`,
  );
}

/**
 * The host part of a `Host` header or a configured name, lowercase, without the port or a
 * trailing dot; an IPv6 address in brackets (`[::1]`), as it appears in a `Host` header.
 */
export function hostName(host: string): string {
  let name = host.trim().toLowerCase();
  if (name.startsWith('[')) name = name.slice(0, name.indexOf(']') + 1) || name;
  else if (name.split(':').length > 2)
    name = `[${name}]`; // a bare IPv6 address (`server.host` "::1")
  else name = name.replace(/:\d*$/, '');
  return name.endsWith('.') ? name.slice(0, -1) : name;
}

/** Names a browser resolves to this machine itself, which no other site can point at us. */
export function isLoopbackName(name: string): boolean {
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    name === '[::1]' ||
    /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(name)
  );
}

/** Whether `Origin` is this service's own (the same host and port as the request's `Host`), or a name the operator listed. */
export function sameSite(origin: string, host: string, allowed: ReadonlySet<string>): boolean {
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed frame, a file), or garbage
  }
  return url.host === host.toLowerCase() || allowed.has(hostName(url.host));
}

/** A content type a page could not send without a preflight (JSON, XML, anything not CORS-safelisted). */
function nonSimpleType(contentType: string): boolean {
  if (contentType === '') return false;
  const essence = contentType.split(';')[0]?.trim().toLowerCase() ?? '';
  return !SIMPLE_TYPES.has(essence);
}
