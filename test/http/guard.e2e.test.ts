import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { startService, tempDir, type Running } from '../support/helpers.js';
import { silent } from '../support/logger.js';

interface Answer {
  status: number;
  body: any;
}

/** One request with the headers a browser would send (fetch may not set `Host`). */
function send(
  url: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request(`${url}${path}`, { method, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          /* not JSON */
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

const portOf = (url: string) => new URL(url).port;

describe('the operator API without a token: no DNS rebinding, no cross-site changes', () => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('answers /v1 and /metrics for loopback names only, and still takes webhooks and health checks by any name', async () => {
    service = await startService({ store: 'memory' });
    const { url } = service;
    const port = portOf(url);
    const rebound = await send(url, 'GET', '/v1/deadletters', { host: `evil.example:${port}` });
    expect(rebound.status).toBe(403);
    expect(rebound.body.error.code).toBe('host_not_allowed');
    expect(rebound.body.error.message).toBe(
      `Host "evil.example:${port}" is not a name GET /v1/deadletters is answered for: without server.apiToken, only loopback names (localhost, 127.0.0.1, [::1]), server.host ("127.0.0.1") and the names in server.allowedHosts are, so a web page cannot reach the API through a DNS name of its own. If you reach the service by this name (a proxy, a tunnel), add "evil.example" to server.allowedHosts (INTAKE_ALLOWED_HOSTS)`,
    );
    expect((await send(url, 'GET', '/metrics', { host: 'evil.example' })).status).toBe(403);
    expect((await send(url, 'GET', '/v1/events/x', { host: 'evil.example' })).status).toBe(403);
    for (const host of [
      `localhost:${port}`,
      `127.0.0.1:${port}`,
      `[::1]:${port}`,
      `LOCALHOST:${port}`,
      `app.localhost:${port}`,
    ]) {
      expect((await send(url, 'GET', '/v1/deadletters', { host })).status, host).toBe(200);
    }
    const hook = await send(
      url,
      'POST',
      '/webhooks/generic',
      { host: 'abc.ngrok.example', 'content-type': 'application/json' },
      JSON.stringify({ id: 'm1', sessionKey: 'cli:a', content: 'hi' }),
    );
    expect(hook.status).toBe(200);
    expect((await send(url, 'GET', '/healthz', { host: 'evil.example' })).status).toBe(200);
  });

  it('answers a name listed in server.allowedHosts, with or without its port', async () => {
    service = await startService({
      store: 'memory',
      server: { allowedHosts: ['intake.example', 'Proxy.Example:8443'] },
    });
    expect((await send(service.url, 'GET', '/v1/stats', { host: 'intake.example:9999' })).status).toBe(200);
    expect((await send(service.url, 'GET', '/v1/stats', { host: 'proxy.example' })).status).toBe(200);
    expect((await send(service.url, 'GET', '/v1/stats', { host: 'other.example' })).status).toBe(403);
  });

  it('refuses a change with no header a page could not send unasked, or from another origin, and changes nothing', async () => {
    service = await startService({ store: 'memory', turns: { mode: 'collect' } });
    const { url } = service;
    const host = `127.0.0.1:${portOf(url)}`;
    // A page's blind `fetch(url, { method: 'POST', mode: 'no-cors' })`, with and without a text body.
    const blind = await send(url, 'POST', '/v1/turns/abc/done', { host });
    expect(blind.status).toBe(403);
    expect(blind.body.error.code).toBe('csrf_header_missing');
    expect(blind.body.error.message).toContain('X-Requested-With');
    expect(
      (await send(url, 'POST', '/v1/turns/abc/done', { host, 'content-type': 'text/plain;charset=UTF-8' }, 'x')).body
        .error.code,
    ).toBe('csrf_header_missing');
    expect(
      (
        await send(
          url,
          'POST',
          '/v1/deadletters/retry',
          { host, 'content-type': 'application/x-www-form-urlencoded' },
          'a=1',
        )
      ).body.error.code,
    ).toBe('csrf_header_missing');
    const foreign = await send(
      url,
      'POST',
      '/v1/turns/abc/done',
      { host, origin: 'https://evil.example', 'content-type': 'text/plain' },
      'x',
    );
    expect(foreign.status).toBe(403);
    expect(foreign.body.error.code).toBe('cross_origin');
    // Even with a header it could only send after a preflight we never answer.
    expect(
      (await send(url, 'POST', '/v1/turns/abc/done', { host, origin: 'https://evil.example', 'x-requested-with': 'x' }))
        .body.error.code,
    ).toBe('cross_origin');
    expect(
      (
        await send(
          url,
          'POST',
          '/v1/turns/abc/done',
          { host, origin: 'null', 'content-type': 'application/json' },
          '{}',
        )
      ).body.error.code,
    ).toBe('cross_origin');
    // Reads are not changes: a page cannot read the answer (no CORS), so they need no header.
    expect((await send(url, 'GET', '/v1/stats', { host, origin: 'https://evil.example' })).status).toBe(200);

    // The console (X-Requested-With), an agent's JSON call, a same-origin page: through the guard to the route.
    expect(
      (await send(url, 'POST', '/v1/turns/abc/done', { host, 'x-requested-with': 'agent-intake-console' })).body.error
        .code,
    ).toBe('turn_unknown');
    expect(
      (await send(url, 'POST', '/v1/turns/abc/done', { host, 'content-type': 'application/json' }, '{}')).body.error
        .code,
    ).toBe('turn_unknown');
    expect(
      (await send(url, 'POST', '/v1/turns/abc/done', { host, origin: `http://${host}`, 'x-requested-with': 'x' })).body
        .error.code,
    ).toBe('turn_unknown');
  });

  it('takes a change whose Origin is a name of server.allowedHosts (a proxy in front)', async () => {
    service = await startService({ store: 'memory', server: { allowedHosts: ['intake.example'] } });
    const answer = await send(service.url, 'POST', '/v1/turns/abc/done', {
      host: 'intake.example',
      origin: 'https://intake.example',
      'x-requested-with': 'x',
    });
    expect(answer.body.error.code).toBe('turn_unknown');
  });
});

describe('the operator API with a token', () => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('takes the Bearer scheme in any case (RFC 7235) and nothing else', async () => {
    service = await startService({ store: 'memory', server: { apiToken: 'sesame' } });
    for (const authorization of ['Bearer sesame', 'bearer sesame', 'BEARER sesame', 'Bearer  sesame']) {
      expect((await send(service.url, 'GET', '/v1/stats', { authorization })).status, authorization).toBe(200);
    }
    for (const authorization of [
      'Bearer sesam',
      'Basic sesame',
      'sesame',
      'Bearer sesame x',
      'Bearersesame',
      'BEARERsesame',
      'Bearer\tsesame',
      'Bearer',
      'Bearer ',
    ]) {
      expect((await send(service.url, 'GET', '/v1/stats', { authorization })).status, authorization).toBe(401);
    }
  });

  it('tells a request without a token from one with a wrong or malformed token, both 401 with WWW-Authenticate', async () => {
    service = await startService({ store: 'memory', server: { apiToken: 'sesame' } });
    const answer = async (headers: Record<string, string>) => {
      const response = await fetch(`${service!.url}/v1/stats`, { headers });
      return {
        status: response.status,
        scheme: response.headers.get('www-authenticate'),
        error: ((await response.json()) as any).error,
      };
    };
    const missing = await answer({});
    expect(missing).toMatchObject({ status: 401, scheme: 'Bearer', error: { code: 'missing_token' } });
    expect(missing.error.message).toMatch(/send Authorization: Bearer <server\.apiToken>/);
    const wrong = await answer({ authorization: 'Bearer sesam' });
    expect(wrong).toMatchObject({ status: 401, scheme: 'Bearer error="invalid_token"', error: { code: 'bad_token' } });
    expect(wrong.error.message).toMatch(/is not server\.apiToken/);
    const glued = await answer({ authorization: 'Bearersesame' });
    expect(glued).toMatchObject({ status: 401, error: { code: 'bad_token' } });
    expect(glued.error.message).toMatch(/a space, then the token alone/);
    expect(glued.error.message).not.toContain('sesame');
  });

  it('lets the token protect: any Host, any Origin, no extra header, unless server.allowedHosts is set', async () => {
    service = await startService({ store: 'memory', server: { apiToken: 'sesame' } });
    const authorization = 'Bearer sesame';
    expect((await send(service.url, 'GET', '/v1/stats', { authorization, host: 'intake.example' })).status).toBe(200);
    expect(
      (await send(service.url, 'POST', '/v1/turns/abc/done', { authorization, origin: 'https://dashboard.example' }))
        .body.error.code,
    ).toBe('turn_unknown');
    await service.stop();
    service = await startService({ store: 'memory', server: { apiToken: 'sesame', allowedHosts: ['intake.example'] } });
    expect((await send(service.url, 'GET', '/v1/stats', { authorization, host: 'intake.example' })).status).toBe(200);
    expect(
      (await send(service.url, 'GET', '/v1/stats', { authorization, host: 'other.example' })).body.error.code,
    ).toBe('host_not_allowed');
  });
});

describe('embedded in a host app', () => {
  let intake: Intake | undefined;
  let server: Server | undefined;
  afterEach(async () => {
    server?.close();
    await intake?.close();
  });

  it("guards intake's own routes only: the app's /v1 routes and its own name are the app's business", async () => {
    const dir = tempDir().path;
    intake = await createIntake({
      config: loadConfig({ env: {}, cwd: dir, file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' } } }),
      logger: silent,
      cwd: dir,
    });
    const app = new Koa();
    app.use(intake.middleware());
    app.use((ctx) => {
      ctx.body = { app: ctx.path };
    });
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await send(url, 'POST', '/v1/orders', { host: 'shop.example' })).body).toEqual({ app: '/v1/orders' });
    expect((await send(url, 'GET', '/v1/stats', { host: 'shop.example' })).body.error.code).toBe('host_not_allowed');
  });
});
