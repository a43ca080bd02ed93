import type { Page } from 'playwright-core';
import { nextPoll, openConsole, useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { useRedis } from '../support/redis.js';
import { REAL_TIME_WINDOW } from '../support/windows.js';

// Functions run in the page (playwright serializes them); the test program has no DOM types.
declare const document: any;

describe('the console of two instances on one Redis, in a real browser', () => {
  const chromium = useChromium();
  const redis = useRedis();
  const services: Running[] = [];
  afterEach(async () => {
    await Promise.all(services.splice(0).map((service) => service.stop()));
  });

  const open = async (url: string): Promise<Page> =>
    (await openConsole(chromium.browser, url, { timeoutMs: 15_000 })).page;

  const counter = (page: Page, channel: string, action: string, value: number) =>
    page.waitForFunction(
      ([c, a, v]) =>
        document.querySelector(`#channels-table tr[data-channel="${c}"] td[data-action="${a}"]`)?.textContent === v,
      [channel, action, String(value)] as const,
    );

  // The counters wait for A's next publication (every 2 s).
  it(
    "shows on B one feed of both instances' deliveries, each naming its instance, and the deployment's counters",
    { timeout: 40_000 },
    async () => {
      const file = {
        store: redis.url,
        redis: { keyPrefix: `con${process.pid}`, commandTimeoutMs: 3000 },
        debounce: { ...REAL_TIME_WINDOW, maxMessages: 10 },
      };
      const [a, b] = await Promise.all([startService(file), startService(file)]);
      services.push(a, b);
      const page = await open(b.url);
      await page.locator('#live-activity[data-state="on"]').waitFor();

      expect(
        (await postJson(`${a.url}/webhooks/generic`, { id: 'on-a', sessionKey: 'cli:one', content: 'posted to A' }))
          .status,
      ).toBe(200);
      expect(
        (await postJson(`${b.url}/webhooks/generic`, { id: 'on-b', sessionKey: 'cli:two', content: 'posted to B' }))
          .status,
      ).toBe(200);
      expect(
        (await postJson(`${b.url}/webhooks/generic`, { id: 'on-a', sessionKey: 'cli:one', content: 'posted to A' }))
          .status,
      ).toBe(200);

      // One feed: A's arrival and B's, each with the instance that recorded it.
      const fromA = page.locator('#feed [data-verdict="accepted"]', { hasText: 'posted to A' });
      await fromA.waitFor();
      expect(await fromA.locator('.instance').textContent()).toBe(`@${a.intake.instance}`);
      const fromB = page.locator('#feed [data-verdict="accepted"]', { hasText: 'posted to B' });
      expect(await fromB.locator('.instance').textContent()).toBe(`@${b.intake.instance}`);
      expect(await page.locator('#feed [data-verdict="duplicate"] .instance').textContent()).toBe(
        `@${b.intake.instance}`,
      );

      // The counters are the deployment's: A's received and B's, once A published its own.
      await until(async () => {
        const { channels } = (await (await fetch(`${b.url}/v1/stats`)).json()) as {
          channels: Record<string, Record<string, number>>;
        };
        return channels.generic?.received === 3 && channels.generic.deduped === 1;
      }, 10_000);
      await nextPoll(page, '/v1/stats');
      await counter(page, 'generic', 'received', 3);
      await counter(page, 'generic', 'deduped', 1);
      expect(await page.locator('#scope .served-by').textContent()).toBe(b.intake.instance);
      expect(await page.locator('#scope').textContent()).toMatch(/of all 2 instances on store redis/);
      expect(await page.locator(`#instances li[data-instance="${a.intake.instance}"]`).textContent()).toMatch(
        /received 1,/,
      );
      expect(await page.locator(`#instances li[data-instance="${b.intake.instance}"]`).textContent()).toMatch(
        /\(this page\) received 2,/,
      );

      // A's message traced on B: A's arrival, the output it went into.
      await page.locator('#search-input').fill('on-a');
      await page.locator('#search button[type="submit"]').click();
      const arrival = page.locator('#trace .verdict-accepted');
      await arrival.waitFor();
      expect(await arrival.locator('.instance').textContent()).toBe(`@${a.intake.instance}`);
      await page.locator('#trace .trace-output').waitFor();
    },
  );
});
