import { useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';

// Functions run in the page; the test program has no DOM types.
declare const document: any;

describe('the console shows second thoughts', () => {
  const chromium = useChromium();
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  it('shows a recall after emission, naming the output it is about, and a takeover by hand', async () => {
    service = await startService({
      debounce: { windowMs: 50, maxWaitMs: 200 },
      channels: [{ id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false }],
    });
    const page = await chromium.browser.newPage();
    await page.goto(service.url);
    const post = (body: unknown) => postJson(`${service!.url}/webhooks/qq`, body);
    await post({
      time: 1_718_000_001,
      self_id: 10001,
      post_type: 'message',
      message_type: 'group',
      sub_type: 'normal',
      message_id: 1,
      group_id: 555,
      user_id: 7,
      sender: { user_id: 7 },
      message: [{ type: 'text', data: { text: 'a secret' } }],
    });
    const types = async () =>
      (await service!.intake.store.outboxAfter(0, 10)).map(
        (record) => JSON.parse(record.body) as { type: string; id: string },
      );
    await until(async () => (await types()).length === 1);
    const [message] = await types();
    await post({
      time: 1_718_000_101,
      self_id: 10001,
      post_type: 'notice',
      notice_type: 'group_recall',
      group_id: 555,
      user_id: 7,
      operator_id: 7,
      message_id: 1,
    });
    const put = await fetch(`${service.url}/v1/sessions/qq%3Agroup%3A555/takeover`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json' },
      body: '{"holdMs":60000}',
    });
    expect(put.status).toBe(200);
    await until(async () => (await types()).length === 3);

    const thoughts = () =>
      page.evaluate(() => [...document.querySelectorAll('#outputs .thought')].map((p: any) => p.textContent));
    await until(async () => (await thoughts()).length === 2, 10_000, thoughts);
    const shown = await thoughts();
    const shortId = `${message!.id.slice(0, 6)}…${message!.id.slice(-6)}`;
    expect(shown.some((text: string) => text === `message recalled from output ${shortId}`)).toBe(true);
    expect(shown.some((text: string) => text.startsWith('a person answers until'))).toBe(true);
    const badges = () =>
      page.evaluate(() => [...document.querySelectorAll('#feed .verdict .badge')].map((b: any) => b.textContent));
    await until(async () => (await badges()).includes('recalled'), 10_000, badges);
    await page.close();
  });
});
