import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { tempDir, until } from '../support/helpers.js';
import { silent } from '../support/logger.js';

declare const document: any;

/** What koa-mount does: strip the prefix from ctx.path for the mounted middleware, restore it after. */
function mounted(prefix: string, middleware: Koa.Middleware): Koa.Middleware {
  return async (ctx, next) => {
    if (ctx.path !== prefix && !ctx.path.startsWith(`${prefix}/`)) return next();
    const original = ctx.path;
    ctx.path = original.slice(prefix.length) || '/';
    try {
      await middleware(ctx, async () => {
        ctx.path = original;
        await next();
      });
    } finally {
      ctx.path = original;
    }
  };
}

describe('the console under a path prefix of a host app', () => {
  const chromium = useChromium();
  let intake: Intake | undefined;
  let server: Server | undefined;
  afterEach(async () => {
    server?.close();
    await intake?.close();
  });

  it('loads its assets and data under the prefix (relative links), after a redirect to the trailing slash', async () => {
    const dir = tempDir().path;
    intake = await createIntake({
      config: loadConfig({ env: {}, cwd: dir, file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' } } }),
      logger: silent,
      cwd: dir,
    });
    const app = new Koa();
    // As docs/library.md advises a host app: a browser leaving the feed is no error.
    const errors: Error[] = [];
    app.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'ERR_STREAM_PREMATURE_CLOSE') errors.push(error);
    });
    app.use(mounted('/intake', intake.middleware()));
    app.use((ctx) => {
      ctx.status = 404;
      ctx.body = 'host app: nothing here';
    });
    server = createServer(app.callback());
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    await fetch(`${base}/intake/webhooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"sessionKey":"cli:p","content":"hi"}',
    });
    const page = await chromium.browser.newPage();
    const failed: string[] = [];
    page.on('response', (response) => {
      if (response.status() >= 400) failed.push(`${response.status()} ${response.url()}`);
    });
    await page.goto(`${base}/intake`);
    expect(page.url()).toBe(`${base}/intake/`);
    await until(
      async () =>
        (await page.evaluate(
          () =>
            document.querySelector('#channels-table tr[data-channel="generic"] td[data-action="received"]')
              ?.textContent ?? null,
        )) === '1',
      10_000,
    );
    expect(failed).toEqual([]);
    await page.close();
    expect(errors).toEqual([]);
  });
});
