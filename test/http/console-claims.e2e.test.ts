import { useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { claim } from '../support/claims.js';

// Functions run in the page; the test program has no DOM types.
declare const document: any;

describe('the console shows the claims of agent workers', () => {
  const chromium = useChromium();
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it("shows a claimed output's attempt and lease in Outputs, and the claims in the summary", async () => {
    service = await startService({
      debounce: { windowMs: 0, maxWaitMs: 0 },
      agent: { claims: { leaseMs: 600_000, maxAttempts: 3 } },
    });
    const outputs: string[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output.id);
    });
    await postJson(`${service.url}/webhooks/generic`, { sessionKey: 'cli:w', content: 'for a worker' });
    await until(() => outputs.length === 1);
    const page = await chromium.browser.newPage();
    await page.goto(service.url);
    const delivery = () =>
      page.evaluate(() => {
        const slot = document.querySelector('#outputs .delivery');
        return slot ? { text: slot.textContent, claimed: slot.dataset.claimed ?? null } : null;
      });
    const summary = (key: string) =>
      page.evaluate((k) => document.querySelector(`#summary dd[data-key="${k}"]`)?.textContent ?? null, key);
    await until(async () => (await delivery())?.text === 'delivery: pending', 10_000);
    expect(await summary('claims')).toBe('on');

    const [taken] = (await claim(service)).claims;
    const lease = await page.evaluate(
      (ms) => new Date(ms).toLocaleTimeString([], { hour12: false }),
      taken!.leaseUntil,
    );
    await until(async () => (await delivery())?.claimed === '1', 10_000);
    expect((await delivery())?.text).toBe(`delivery: pending, 1 attempt, claimed: attempt 1, lease until ${lease}`);
    await until(async () => (await summary('claimed')) === '1', 10_000);
    await page.close();
  });
});
