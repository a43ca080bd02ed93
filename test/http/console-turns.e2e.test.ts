import { useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';

// Functions run in the page; the test program has no DOM types.
declare const document: any;

describe('the console shows agent turns', () => {
  const chromium = useChromium();
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('counts the open turns and the messages held for them, and held in the channel table', async () => {
    service = await startService({
      debounce: { windowMs: 50, maxWaitMs: 200 },
      turns: { mode: 'collect', maxMs: 600_000 },
    });
    const outputs: string[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output.id);
    });
    await postJson(`${service.url}/webhooks/generic`, { sessionKey: 'cli:t', content: 'check ORD-123' });
    await until(() => outputs.length === 1);
    await postJson(`${service.url}/webhooks/generic`, { sessionKey: 'cli:t', content: 'also ORD-124' });
    await until(
      async () =>
        ((await (await fetch(`${service!.url}/v1/stats`)).json()) as { turns: { held: number } }).turns.held === 1,
    );
    const page = await chromium.browser.newPage();
    await page.goto(service.url);
    const text = (key: string) =>
      page.evaluate((k) => document.querySelector(`#summary dd[data-key="${k}"]`)?.textContent ?? null, key);
    await until(async () => (await text('open turns')) === '1' && (await text('held')) === '1', 10_000);
    const heldCell = await page.evaluate(
      () =>
        document.querySelector('#channels-table tr[data-channel="generic"] td[data-action="held"]')?.textContent ??
        null,
    );
    expect(heldCell).toBe('1');
    await page.close();
  });
});
