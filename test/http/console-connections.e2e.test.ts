import type { Page } from 'playwright-core';
import { nextPoll, openConsole, useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { fakeTelegram, TOKEN } from '../connections/fake-telegram.js';
import { startService, until, type Running } from '../support/helpers.js';

const XSS = '<img src=x onerror=alert(1)></script><script>alert(2)</script>';
const BOT = '10001000';

// Functions run in the page (playwright serializes them); the test program has no DOM types.
declare const document: any;
declare const getComputedStyle: any;

/** A bot connecting as NapCat does: Bearer token, X-Self-ID, the role in lower case. */
function napcat(service: Running, selfId: string): Promise<WebSocket> {
  const socket = new WebSocket(`${service.url.replace('http', 'ws')}/webhooks/qq`, {
    headers: {
      authorization: 'Bearer tok',
      'x-self-id': selfId,
      'x-client-role': 'universal',
      'user-agent': 'OneBot/11',
    },
  });
  return new Promise((resolve, reject) => {
    socket.once('open', () => resolve(socket));
    socket.once('unexpected-response', (_request, response) =>
      reject(new Error(`handshake refused: ${response.statusCode}`)),
    );
    socket.once('error', reject);
  });
}

describe('the console Connections panel in a real browser', () => {
  const chromium = useChromium();
  let service: Running | undefined;
  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  const start = () =>
    startService({ channels: [{ id: 'qq', adapter: 'onebot', transport: 'ws-reverse', accessToken: 'tok' }] });

  const open = (url: string) => openConsole(chromium.browser, url, { timeoutMs: 10_000 });

  /** The text of each cell of the panel's row for a bot, by class. */
  const cells = (page: Page, bot: string) =>
    page
      .locator(`#connections-table tr[data-bot="${bot}"]`)
      .evaluate((row: any) =>
        Object.fromEntries([...row.cells].map((cell: any) => [cell.className.split(' ')[0], cell.textContent])),
      );

  // Each step waits for the panel's next poll: more room than the default 20 s.
  it(
    'says no bot is connected, lists a reverse-WebSocket bot open with its heartbeat, then closed',
    { timeout: 40_000 },
    async () => {
      const running = await start();
      service = running;
      const { page, dialogs } = await open(running.url);

      const empty = page.locator('#connections-table td.empty');
      await empty.waitFor();
      expect(await empty.textContent()).toBe(
        'No bot is connected. A channel with "transport": "ws-reverse" lets bots (NapCat, Lagrange, …) connect to /webhooks/<id> of this service; with "transport": "ws" the service dials the bot\'s forward WebSocket at the channel\'s url. Without a public URL: a "discord" channel holds the Discord Gateway, Slack "transport": "socket" holds a Socket Mode connection, Telegram "transport": "poll" long-polls getUpdates; one instance holds each.',
      );
      expect(await page.locator('#connections-count').textContent()).toBe('0');

      const socket = await napcat(running, BOT);
      socket.send(
        JSON.stringify({
          post_type: 'meta_event',
          meta_event_type: 'heartbeat',
          interval: 5000,
          status: { online: true, good: true },
          time: Math.floor(Date.now() / 1000),
          self_id: Number(BOT),
        }),
      );
      await until(async () => typeof (await running.intake.connections())[0]?.lastHeartbeatAt === 'number');
      await nextPoll(page, '/v1/connections');

      // Open, with a heartbeat (should a poll show the row before the beat, the next one shows both).
      await page.waitForFunction((bot) => {
        const row = document.querySelector(`#connections-table tr[data-bot="${bot}"]`);
        return row?.dataset.state === 'open' && row.querySelector('td.heartbeat time') !== null;
      }, BOT);
      const row = page.locator(`#connections-table tr[data-bot="${BOT}"]`);
      const shown = await cells(page, BOT);
      expect(shown).toMatchObject({
        channel: 'qq',
        transport: 'ws-reverse',
        bot: BOT,
        role: 'Universal',
        state: 'open',
        reconnects: '0',
      });
      expect(shown.instance).toBe((await running.intake.connections())[0]?.instance);
      expect(shown.heartbeat).toMatch(/^(just now|\d+ s ago) every 5 s$/);
      expect(shown.connected).toMatch(/^(just now|\d+ s ago)$/);
      // The meta event is kept on the connection: no message event yet.
      expect(shown.event).toBe('never');
      expect(await row.locator('td.heartbeat time').getAttribute('title')).toMatch(/\d{2}:\d{2}:\d{2}/);
      expect(Date.parse((await row.locator('td.heartbeat time').getAttribute('datetime')) ?? '')).toBe(
        (await running.intake.connections())[0]?.lastHeartbeatAt,
      );
      expect(await row.locator('.badge').evaluate((badge: any) => getComputedStyle(badge).color)).toBe(
        'rgb(21, 128, 61)',
      );
      await page.locator('#connections-count', { hasText: '1' }).waitFor();
      expect(await page.locator('#connections-table td.empty').count()).toBe(0);

      const gone = new Promise((resolve) => socket.once('close', resolve));
      socket.close();
      await gone;
      await until(async () => (await running.intake.connections())[0]?.state === 'closed');
      await nextPoll(page, '/v1/connections');
      await page.locator(`#connections-table tr[data-bot="${BOT}"][data-state="closed"]`).waitFor();
      expect(await row.locator('.badge').textContent()).toBe('closed');
      expect(await row.locator('.badge').evaluate((badge: any) => getComputedStyle(badge).color)).toBe(
        'rgb(185, 28, 28)',
      );
      await page.locator('#connections-count', { hasText: '0' }).waitFor();
      expect(await page.locator('#connections-error').isHidden()).toBe(true);
      expect(dialogs).toEqual([]);
      await page.context().close();
    },
  );

  it(
    'renders every field as text, marks a late heartbeat, and shows an error line while /v1/connections fails',
    { timeout: 40_000 },
    async () => {
      const running = await start();
      service = running;
      // The service only lets digits be a bot id; hostile rows come from a stand-in answer.
      const now = Date.now();
      const hostile = {
        channel: XSS,
        adapter: 'onebot',
        transport: XSS,
        botId: XSS,
        role: XSS,
        instance: XSS,
        state: 'connecting',
        connectedAt: now - 90_000,
        lastEventAt: null,
        lastHeartbeatAt: null,
        reconnects: 2,
      };
      const late = {
        channel: 'qq',
        adapter: 'onebot',
        transport: 'ws-reverse',
        botId: '20002000',
        role: 'Event',
        instance: 'elsewhere:1',
        state: 'open',
        connectedAt: now - 7_200_000,
        lastEventAt: now - 300_000,
        lastHeartbeatAt: now - 60_000,
        reconnects: 5,
        heartbeatMs: 5000,
      };
      let failing = false;
      const { page, dialogs } = await openConsole(chromium.browser, running.url, {
        timeoutMs: 10_000,
        prepare: (context) =>
          context.route('**/v1/connections', (route) =>
            route.fulfill(
              failing
                ? {
                    status: 503,
                    contentType: 'application/json',
                    body: JSON.stringify({ error: { code: 'unavailable', message: 'store is down' } }),
                  }
                : {
                    status: 200,
                    contentType: 'application/json',
                    body: JSON.stringify({ connections: [hostile, late] }),
                  },
            ),
          ),
      });

      await page.locator('#connections-table tr[data-state="connecting"]').waitFor();
      const shown = await page
        .locator('#connections-table tr[data-state="connecting"]')
        .evaluate((row: any) => [...row.cells].map((cell: any) => cell.textContent));
      expect(shown).toEqual([XSS, XSS, XSS, XSS, XSS, 'connecting', '1 min ago', 'never', 'never', '2']);
      expect(await page.locator('img[src="x"]').count()).toBe(0);
      expect(await page.locator('script').count()).toBe(1);
      expect(await cells(page, '20002000')).toMatchObject({
        state: 'open',
        connected: '2 h ago',
        event: '5 min ago',
        heartbeat: '1 min ago every 5 s late',
        reconnects: '5',
      });
      expect(
        await page.locator('#connections-table tr[data-bot="20002000"] td.heartbeat').getAttribute('class'),
      ).toContain('late');
      expect(await page.locator('#connections-count').textContent()).toBe('1');

      failing = true;
      await nextPoll(page, '/v1/connections');
      const error = page.locator('#connections-error');
      await error.waitFor();
      expect(await error.textContent()).toBe('connections unavailable: store is down');
      // The last rows stay on screen while the request fails.
      expect(await page.locator('#connections-table tr.connection').count()).toBe(2);
      failing = false;
      await nextPoll(page, '/v1/connections');
      await error.waitFor({ state: 'hidden' });
      expect(dialogs).toEqual([]);
      await page.context().close();
    },
  );

  it(
    'lists a Telegram long-polling channel as a poll row, open, with the bot id from its token',
    { timeout: 40_000 },
    async () => {
      const telegram = await fakeTelegram();
      try {
        const running = await startService({
          channels: [
            {
              id: 'tg',
              adapter: 'telegram',
              transport: 'poll',
              botToken: TOKEN,
              apiBaseUrl: telegram.url,
              pollTimeoutS: 1,
            },
          ],
        });
        service = running;
        const { page, dialogs } = await open(running.url);
        // Should the page's first poll precede the channel's first answered getUpdates, the next one shows it open.
        await until(async () => (await running.intake.connections())[0]?.state === 'open');
        await nextPoll(page, '/v1/connections');
        await page.locator('#connections-table tr[data-bot="123456"][data-state="open"]').waitFor();
        expect(await cells(page, '123456')).toMatchObject({
          channel: 'tg',
          transport: 'poll',
          bot: '123456',
          role: 'Universal',
          state: 'open',
          reconnects: '0',
        });
        await page.locator('#connections-count', { hasText: '1' }).waitFor();
        expect(await page.locator('#connections-table td.empty').count()).toBe(0);
        expect(dialogs).toEqual([]);
        await page.context().close();
      } finally {
        await service?.stop();
        service = undefined;
        await telegram.close();
      }
    },
  );
});
