import { nextPoll, useChromium } from './browser.js';
import { describe, expect, it } from 'vitest';
import type { Output } from '../../src/events/output.js';
import { postJson, startService, until } from '../support/helpers.js';

// Functions run in the page; the test program has no DOM types.
declare const document: any;

describe('the operator console: agent turns', () => {
  const chromium = useChromium();

  it('shows the open turns and the messages they hold, per session', async () => {
    const service = await startService({ debounce: { windowMs: 30, maxWaitMs: 100 }, turns: { mode: 'collect' } });
    try {
      const outputs: Output[] = [];
      service.intake.on('chat.processedMessage', (output) => {
        outputs.push(output);
      });
      const say = (id: string, content: string) =>
        postJson(`${service.url}/webhooks/generic`, { id, sessionKey: 'cli:alice', content });
      await say('m1', 'first');
      await until(() => outputs.length === 1);
      await say('m2', 'second');
      await say('m3', 'third');
      await until(async () => (await service.intake.turn('cli:alice')).held >= 1);
      const page = await (await chromium.browser.newContext()).newPage();
      page.setDefaultTimeout(8000);
      // The page's clock runs on from the real time; `nextPoll` moves it on to the next stats poll.
      await page.clock.install();
      await page.goto(service.url);
      await page.waitForFunction(
        () => document.querySelector('#summary dd[data-key="open turns"]')?.textContent === '1',
      );
      const row = page.locator('#turns li[data-session="cli:alice"]');
      await row.waitFor();
      expect(await row.textContent()).toContain(`turn ${outputs[0]!.id} open`);
      const held = String((await service.intake.turn('cli:alice')).held);
      expect(await row.locator('.held').getAttribute('data-held')).toBe(held);
      // Done: the held messages go out and the row leaves the list at the next poll.
      await postJson(`${service.url}/v1/turns/${outputs[0]!.id}/done`, {});
      await until(() => outputs.length === 2);
      await until(async () => (await service.intake.turn('cli:alice')).held === 0);
      await nextPoll(page, '/v1/stats');
      await page.waitForFunction(
        () => document.querySelector('#turns li[data-session="cli:alice"] .held')?.dataset.held === '0',
      );
    } finally {
      await service.stop();
    }
  }, 30_000);
});
