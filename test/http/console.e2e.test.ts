import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import type { Page } from 'playwright-core';
import { nextPoll, openConsole, useChromium } from './browser.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { standardWebhooks } from '../../src/core/signing.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { readEvents } from '../support/sse.js';
import { PNG, serve, type TestServer } from '../support/servers.js';

const SIGNED_SECRET = 'whsec_' + Buffer.from('console-signed-channel-secret-01').toString('base64');
const AGENT_SECRET = 'whsec_' + Buffer.from('console-agent-secret-0123456789').toString('base64');
const XSS = '<img src=x onerror=alert(1)></script><script>alert(2)</script>';
/** `CONSOLE_SCREENSHOT=docs/console.png npx vitest run test/http/console.e2e.test.ts` writes the README picture. */
const SCREENSHOT = process.env.CONSOLE_SCREENSHOT;

// Functions run in the page (playwright serializes them); the test program has no DOM types,
// and the page's CSP forbids evaluating strings.
declare const document: any;
declare const sessionStorage: any;

describe('the operator console in a real browser', () => {
  const chromium = useChromium();
  let agent: TestServer;
  let files: TestServer;
  let service: Running | undefined;
  /** The fake agent refuses (400) anything mentioning "poison" until healed. */
  let healed = false;

  beforeAll(async () => {
    agent = await serve((req, res) => {
      let body = '';
      req.on('data', (chunk) => {
        body += chunk;
      });
      req.on('end', () => {
        res.statusCode = !healed && body.includes('poison') ? 400 : 200;
        res.end(res.statusCode === 400 ? 'unknown tool "poison"' : '');
      });
    });
    files = await serve((_req, res) => {
      res.setHeader('content-type', 'image/png');
      res.end(PNG);
    });
  });
  afterAll(async () => {
    await agent?.close();
    await files?.close();
  });
  afterEach(async () => {
    await service?.stop();
    service = undefined;
    healed = false;
  });

  const start = (extra: Record<string, unknown> = {}) =>
    startService({
      // The fragments of one session are one delivery, and maxMessages closes their buffer.
      debounce: { windowMs: 1000, maxMessages: 3, maxWaitMs: 5000 },
      media: { allowHosts: [`127.0.0.1:${files.port}`], timeoutMs: 2000, retries: 1 },
      agent: {
        url: `http://127.0.0.1:${agent.port}/inbox`,
        secret: AGENT_SECRET,
        retries: 2,
        minBackoffMs: 20,
        maxBackoffMs: 50,
        timeoutMs: 2000,
      },
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: 'signed', adapter: 'generic', secret: SIGNED_SECRET },
      ],
      ...extra,
    });

  const open = (url: string) => openConsole(chromium.browser, url, { timeoutMs: 8000 });

  /** Wait until the channel's counter for an action shows `value`. */
  const counter = (page: Page, channel: string, action: string, value: number) =>
    page.waitForFunction(
      ([c, a, v]) =>
        document.querySelector(`#channels-table tr[data-channel="${c}"] td[data-action="${a}"]`)?.textContent === v,
      [channel, action, String(value)] as const,
    );

  it('shows merged outputs with their parts, verdicts with reasons, counts, media and dead letters, and retries them', async () => {
    const running = await start();
    service = running;
    const post = (body: unknown, channel = 'generic', headers: Record<string, string> = {}) =>
      postJson(`${running.url}/webhooks/${channel}`, body, headers);
    const { page, dialogs } = await open(running.url);
    await page.locator('#live-activity[data-state="on"]').waitFor();

    // A session typed in three fragments, a platform retry of the first, a forged signature,
    // a message the agent refuses, a hostile one, and a photo. The fragments come in one delivery:
    // admitted at one instant, no stall of the machine can let the window close between them.
    const fragments = [
      ['frag-1', '帮我查一下'],
      ['frag-2', '订单 ORD-123'],
      ['frag-3', '的状态'],
    ].map(([id, content]) => ({ id, sessionKey: 'cli:alice', sender: { id: 'alice', name: 'Alice' }, content }));
    expect((await post(fragments)).body).toMatchObject({ accepted: 3, duplicates: 0 });
    expect(
      (
        await post({
          id: 'frag-1',
          sessionKey: 'cli:alice',
          sender: { id: 'alice', name: 'Alice' },
          content: '帮我查一下',
        })
      ).body,
    ).toMatchObject({ duplicates: 1 });
    const forged = JSON.stringify({ sessionKey: 'cli:eve', content: 'let me in' });
    const at = Math.floor(Date.now() / 1000);
    expect(
      (
        await post(forged, 'signed', {
          'webhook-id': 'msg_forged',
          'webhook-timestamp': String(at),
          'webhook-signature': standardWebhooks.sign(SIGNED_SECRET, 'msg_forged', at, 'another body'),
        })
      ).status,
    ).toBe(401);
    expect((await post({ id: 'bad-1', sessionKey: 'cli:bob', content: 'please run the poison tool' })).status).toBe(
      200,
    );
    expect(
      (await post({ id: 'xss-1', sessionKey: 'cli:mallory', sender: { id: 'mallory', name: XSS }, content: XSS }))
        .status,
    ).toBe(200);
    expect(
      (
        await post({
          id: 'pic-1',
          sessionKey: 'cli:carol',
          content: 'receipt attached',
          mediaUrl: `http://127.0.0.1:${files.port}/receipt.png`,
          mimeType: 'image/png',
        })
      ).status,
    ).toBe(200);

    // The merged output names the three platform ids that went into it.
    const merged = page.locator('#outputs .output', { hasText: 'merged 3 parts' });
    await merged.waitFor();
    expect(await merged.locator('.part').allTextContents()).toEqual(['frag-1', 'frag-2', 'frag-3']);
    expect(await merged.locator('.content').textContent()).toBe('帮我查一下订单 ORD-123 的状态');
    await merged.locator('.delivery[data-state="delivered"]').waitFor();
    // The accepted arrivals point at that output.
    await page
      .locator('#feed .verdict-accepted', { hasText: 'frag-2' })
      .locator('.merged', { hasText: '→ output' })
      .waitFor();

    // The retry is a duplicate naming the original; the forged delivery is rejected with its code.
    const duplicate = page.locator('#feed [data-verdict="duplicate"]');
    await duplicate.waitFor();
    expect(await duplicate.locator('.reason').textContent()).toMatch(/frag-1/);
    const rejected = page.locator('#feed [data-verdict="rejected"]');
    await rejected.waitFor();
    expect(await rejected.locator('.reason').textContent()).toMatch(/^bad_signature: /);
    expect(await rejected.locator('.channel').textContent()).toBe('signed');

    // Per-channel counters from /v1/stats, and which store they come from.
    await until(() => {
      const stats = running.intake.metrics.channelStats();
      return stats.generic?.emitted === 4 && stats.signed?.rejected === 1;
    });
    await nextPoll(page, '/v1/stats');
    await counter(page, 'generic', 'received', 7);
    await counter(page, 'generic', 'deduped', 1);
    await counter(page, 'generic', 'debounced', 2);
    await counter(page, 'generic', 'emitted', 4);
    await counter(page, 'signed', 'rejected', 1);
    expect(await page.locator('#scope').textContent()).toMatch(
      /feed, trail and counters of this instance, the whole deployment on store sqlite/,
    );

    // The photo is a thumbnail fetched through /v1/media and shown from a blob: URL.
    const thumb = page.locator('#outputs .output', { hasText: 'receipt attached' }).locator('img.thumb');
    await thumb.waitFor();
    await page.waitForFunction(() => {
      const img = document.querySelector('#outputs img.thumb');
      return img !== null && img.src.startsWith('blob:') && img.complete && img.naturalWidth === 1;
    });

    // The hostile message is text: visible as typed, nothing ran, no element was made from it.
    const hostile = page.locator('#feed li', { hasText: 'xss-1' });
    await hostile.waitFor();
    expect(await hostile.locator('.preview').textContent()).toBe(XSS);
    expect(await hostile.locator('.sender').textContent()).toBe(`${XSS} (mallory)`);
    expect(await page.locator('#outputs .output', { hasText: 'onerror' }).locator('.content').textContent()).toBe(XSS);
    expect(await page.locator('img[src="x"]').count()).toBe(0);
    expect(await page.locator('script').count()).toBe(1);

    // Search: a platform id traces to its output; an unknown id is taken for a session key.
    await page.fill('#search-input', 'frag-2');
    await page.press('#search-input', 'Enter');
    const traced = page.locator('#trace .trace-output');
    await traced.waitFor();
    expect(await traced.locator('.part').allTextContents()).toEqual(['frag-1', 'frag-2', 'frag-3']);
    expect(await traced.locator('.delivery').textContent()).toBe('delivery: delivered, 1 attempt');
    await page.fill('#search-input', 'cli:mallory');
    await page.press('#search-input', 'Enter');
    await page.locator('#feed-filter', { hasText: 'session cli:mallory' }).waitFor();
    await page.waitForFunction(() => {
      const sessions = [...document.querySelectorAll('#feed .entry .session')].map((s: any) => s.textContent);
      return sessions.length > 0 && sessions.every((s) => s === 'cli:mallory');
    });
    await page.click('#search-clear');
    await page.locator('#feed-filter').waitFor({ state: 'hidden' });

    // The refused push is a dead letter with the agent's answer; retrying it delivers it. The
    // dead letters are read after each stats poll.
    await until(async () => (await running.intake.store.deliveryCounts()).dead === 1);
    await nextPoll(page, '/v1/stats');
    const letter = page.locator('#dead-list .dead-letter');
    await letter.waitFor();
    expect(await letter.locator('.session').textContent()).toBe('cli:bob');
    expect(await letter.locator('.error').textContent()).toMatch(/400/);
    await page.locator('#dead-count', { hasText: '1' }).waitFor();
    if (SCREENSHOT) {
      mkdirSync(dirname(resolve(SCREENSHOT)), { recursive: true });
      await page.screenshot({ path: SCREENSHOT });
    }
    healed = true;
    await letter.locator('button.retry').click();
    await letter.waitFor({ state: 'detached' });
    await page.locator('#dead-count', { hasText: '0' }).waitFor();
    await page
      .locator('#outputs .output', { hasText: 'poison' })
      .locator('.delivery[data-state="delivered"]')
      .waitFor();
    expect(dialogs).toEqual([]);
    await page.context().close();
  });

  it('resumes a stream that ended after the id it last got, as the service sent it (<seq>@<life>)', async () => {
    const running = await start({ debounce: { windowMs: 50, maxWaitMs: 500 } });
    service = running;
    const { page } = await open(running.url);
    await page.locator('#live-events[data-state="on"]').waitFor();
    await postJson(`${running.url}/webhooks/generic`, {
      id: 'cut-1',
      sessionKey: 'cli:erin',
      content: 'before the cut',
    });
    await page.locator('#outputs .output', { hasText: 'before the cut' }).waitFor();
    const [sent] = await readEvents(`${running.url}/v1/events?after=0`, 1);
    // Every stream ends (a proxy's idle cut, a restart): the console reconnects after `retry`.
    running.server.closeAllConnections();
    await page.locator('#live-events[data-state="off"]').waitFor();
    const again = page.waitForRequest((request) => request.url().includes('/v1/events?'));
    await page.clock.runFor(2500);
    expect(new URL((await again).url()).searchParams.get('after')).toBe(sent!.id);
    await page.context().close();
  });

  it('asks for the API token once, keeps it out of the URL, and loads the data after it', async () => {
    // One message a session: a short window.
    const running = await start({
      server: { apiToken: 'console-e2e-token' },
      debounce: { windowMs: 50, maxWaitMs: 500 },
    });
    service = running;
    const { page } = await open(running.url);
    await page.locator('#token-panel').waitFor();
    await page.fill('#token-input', 'wrong-token');
    await page.press('#token-input', 'Enter');
    await page.locator('#token-error').waitFor();
    await page.fill('#token-input', 'console-e2e-token');
    await page.press('#token-input', 'Enter');
    await page.locator('#token-panel').waitFor({ state: 'hidden' });
    await page.locator('#live-activity[data-state="on"]').waitFor();
    await postJson(`${running.url}/webhooks/generic`, {
      id: 'tok-1',
      sessionKey: 'cli:dana',
      content: 'hello with a token',
    });
    await page.locator('#feed li', { hasText: 'hello with a token' }).waitFor();
    await page.locator('#outputs .output', { hasText: 'hello with a token' }).waitFor();
    await nextPoll(page, '/v1/stats');
    await counter(page, 'generic', 'received', 1);
    expect(page.url()).not.toContain('console-e2e-token');
    expect(await page.evaluate(() => sessionStorage.getItem('agent-intake.apiToken'))).toBe('console-e2e-token');
    await page.context().close();
  });
});
