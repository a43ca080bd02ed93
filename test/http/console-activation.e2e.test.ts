import { useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';

// Functions run in the page; the test program has no DOM types.
declare const document: any;

describe('the console shows which messages reached the agent', () => {
  const chromium = useChromium();
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('marks kept and denied deliveries, and unfolds the context an output carried', async () => {
    service = await startService({
      debounce: { windowMs: 50, maxWaitMs: 200 },
      activation: { group: 'mention', wakeWords: ['bot'] },
      access: { deny: ['generic:spammer'] },
    });
    const outputs: string[] = [];
    service.intake.on('chat.processedMessage', (output) => {
      outputs.push(output.id);
    });
    const page = await chromium.browser.newPage();
    await page.goto(service.url);
    const say = (id: string, sender: string, content: string) =>
      postJson(`${service!.url}/webhooks/generic`, {
        id,
        sessionKey: 'cli:group:g',
        conversation: { type: 'group', id: 'g' },
        sender: { id: sender },
        content,
      });
    const kept = async () =>
      ((await (await fetch(`${service!.url}/v1/conversations/cli%3Agroup%3Ag`)).json()) as { context: unknown[] })
        .context.length;
    await say('c1', 'ann', 'lunch anyone?');
    await until(async () => (await kept()) === 1);
    await say('c2', 'spammer', 'buy now');
    await say('c3', 'bob', 'bot, book a table');
    await until(() => outputs.length === 1);

    const badges = () =>
      page.evaluate(() => [...document.querySelectorAll('#feed .verdict .badge')].map((b: any) => b.textContent));
    await until(async () => {
      const seen = await badges();
      return seen.includes('kept as context') && seen.includes('denied');
    }, 10_000);
    await until(
      async () =>
        (await page.evaluate(() => document.querySelector('#outputs details.context summary')?.textContent ?? '')) ===
        'context: 1 message',
      10_000,
    );
    await page.click('#outputs details.context summary');
    const lines = await page.evaluate(() =>
      [...document.querySelectorAll('#outputs details.context li')].map((li: any) => li.textContent),
    );
    expect(lines).toEqual(['ann: lunch anyone?']);
    expect(await page.evaluate(() => document.querySelector('#outputs .trigger')?.textContent)).toBe(
      'reached the agent by wake',
    );
    // The kept arrival says which output carried it.
    await until(async () =>
      (await page.evaluate(() => [...document.querySelectorAll('#feed .merged')].map((m: any) => m.textContent))).some(
        (text: string) => text.startsWith('→ context of output'),
      ),
    );
    await page.close();
  });
});
