import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { standardWebhooks } from '../../src/core/signing.js';
import { tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';

const SECRET = 'whsec_' + Buffer.from('embedding-test-secret-0123456789').toString('base64');

/** A body parser as koa-bodyparser is: reads the stream, sets ctx.request.body, and keeps the raw text when asked. */
function bodyParser(keepRaw: boolean): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.method === 'POST') {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      const text = Buffer.concat(chunks).toString('utf8');
      (ctx.request as { body?: unknown }).body = text ? (JSON.parse(text) as unknown) : {};
      if (keepRaw) (ctx.request as { rawBody?: string }).rawBody = text;
    }
    await next();
  };
}

describe('embedding the intake in another Koa app', () => {
  let intake: Intake | undefined;
  let server: Server | undefined;
  afterEach(async () => {
    server?.close();
    await intake?.close();
  });

  async function host(
    build: (app: Koa, intake: Intake) => void,
    serverSettings: Record<string, unknown> = {},
  ): Promise<string> {
    const dir = tempDir().path;
    const config = loadConfig({
      env: {},
      cwd: dir,
      file: {
        store: 'memory',
        logLevel: 'silent',
        media: { dir: 'media' },
        server: serverSettings,
        channels: [{ id: 'signed', adapter: 'generic', secret: SECRET }],
      },
    });
    intake = await createIntake({ config, logger: silent, cwd: dir });
    const app = new Koa();
    build(app, intake);
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  }

  const signedPost = (url: string, id: string) => {
    const body = JSON.stringify({ sessionKey: 'cli:emb', content: `hello ${id}`, id });
    const at = Math.floor(Date.now() / 1000);
    return fetch(`${url}/webhooks/signed`, {
      method: 'POST',
      body,
      headers: {
        'content-type': 'application/json',
        'webhook-id': id,
        'webhook-timestamp': String(at),
        'webhook-signature': standardWebhooks.sign(SECRET, id, at, body),
      },
    });
  };

  it('verifies a signed webhook from the raw body a body parser mounted ahead kept', async () => {
    const url = await host((app, intake) => {
      app.use(bodyParser(true));
      app.use(intake.middleware());
    });
    const answer = await signedPost(url, 'm1');
    expect(answer.status).toBe(200);
    expect(await answer.json()).toMatchObject({ accepted: 1 });
  });

  it('says how to mount it when a body parser ahead kept no raw body (not a misleading bad_json)', async () => {
    const url = await host((app, intake) => {
      app.use(bodyParser(false));
      app.use(intake.middleware());
    });
    const answer = await signedPost(url, 'm2');
    expect(answer.status).toBe(500);
    const body = (await answer.json()) as { error: { code: string; message: string } };
    expect(body.error.code).toBe('body_already_read');
    expect(body.error.message).toMatch(/mount intake\.middleware\(\).*before the body parser.*rawBody/);
    expect(await intake!.store.openBuffers()).toBe(0);
  });

  it("hands requests it has no route for to the app's own middleware, and leaves the app's errors alone", async () => {
    const url = await host((app, intake) => {
      app.use(intake.middleware());
      app.use(async (ctx) => {
        if (ctx.path === '/boom') ctx.throw(418, 'the app itself');
        ctx.body = `app: ${ctx.path}`;
      });
    });
    expect(await (await fetch(`${url}/own/page`)).text()).toBe('app: /own/page');
    const boom = await fetch(`${url}/boom`);
    expect(boom.status).toBe(418);
    expect(await boom.text()).toBe('the app itself');
    expect((await fetch(`${url}/v1/stats`)).status).toBe(200);
    expect((await signedPost(url, 'm3')).status).toBe(200);
  });

  it('mounts only the webhooks with intake.webhooks(): the app keeps its own /metrics, / and API', async () => {
    const url = await host((app, intake) => {
      app.use(intake.webhooks());
      app.use(async (ctx) => {
        ctx.body = `app: ${ctx.path}`;
      });
    });
    expect((await signedPost(url, 'm4')).status).toBe(200);
    for (const path of ['/metrics', '/', '/v1/stats', '/readyz'])
      expect(await (await fetch(`${url}${path}`)).text()).toBe(`app: ${path}`);
    // A refused webhook is still answered by the intake, as the platform expects.
    const forged = await fetch(`${url}/webhooks/signed`, {
      method: 'POST',
      body: '{}',
      headers: { 'content-type': 'application/json' },
    });
    expect(forged.status).toBe(401);
    expect(
      (
        await fetch(`${url}/webhooks/nope`, {
          method: 'POST',
          body: '{}',
          headers: { 'content-type': 'application/json' },
        })
      ).status,
    ).toBe(404);
  });

  it('enforces apiToken through intake.middleware() as npm start does: the API and metrics need the bearer token, webhooks and health do not', async () => {
    const url = await host(
      (app, intake) => {
        app.use(intake.middleware());
      },
      { apiToken: 'sesame' },
    );
    for (const path of ['/v1/stats', '/v1/events', '/metrics']) {
      const refused = await fetch(`${url}${path}`);
      expect(refused.status, path).toBe(401);
      await refused.body?.cancel();
    }
    expect((await fetch(`${url}/v1/stats`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${url}/v1/stats`, { headers: { authorization: 'Bearer sesame' } })).status).toBe(200);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
    expect((await signedPost(url, 'm5')).status).toBe(200);
  });
});
