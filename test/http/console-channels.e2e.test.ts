import { createHmac } from 'node:crypto';
import { encrypt, getSignature } from '@wecom/crypto';
import type { Page } from 'playwright-core';
import { nextPoll, openConsole, useChromium } from './browser.js';
import { afterEach, describe, expect, it } from 'vitest';
import { wxSignature } from '../../src/adapters/wx/crypto.js';
import { fixture } from '../fixtures/index.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';

const KEY = 'abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG';
const CORP_ID = 'ww1234567890abcdef';
const DT_SECRET = 'dingtalk-app-secret-0123456789abcdefghijklmnopqrstuvwxyzABCDEFGH';

// Functions run in the page (playwright serializes them); the test program has no DOM types.
declare const document: any;

describe('the console channel table in a real browser', () => {
  const chromium = useChromium();
  let service: Running | undefined;
  afterEach(async () => {
    await service?.stop();
    service = undefined;
  });

  /** One message on each Chinese platform's channel, signed (and encrypted) as the platform does. */
  async function deliverOneEach(url: string): Promise<void> {
    const seconds = String(Math.floor(Date.now() / 1000));
    const wx = new URLSearchParams({
      signature: wxSignature('wx-token', seconds, '42'),
      timestamp: seconds,
      nonce: '42',
      openid: 'oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV',
    });
    const wxBody = `<xml><ToUserName><![CDATA[gh_3f5e2a1b9c7d]]></ToUserName><FromUserName><![CDATA[oRd5a6kQd3Xh8Zy1Lm2NpQ7sT9uV]]></FromUserName><CreateTime>${seconds}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[你好]]></Content><MsgId>6054768590064713728</MsgId></xml>`;
    expect(
      (
        await fetch(`${url}/webhooks/wx?${wx}`, {
          method: 'POST',
          headers: { 'content-type': 'text/xml' },
          body: wxBody,
        })
      ).status,
    ).toBe(200);

    const plain = `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><FromUserName><![CDATA[ZhangSan]]></FromUserName><CreateTime>${seconds}</CreateTime><MsgType><![CDATA[text]]></MsgType><Content><![CDATA[报销]]></Content><MsgId>7381234567890123456</MsgId><AgentID>1000002</AgentID></xml>`;
    const ciphertext = encrypt(KEY, plain, CORP_ID);
    const wecom = new URLSearchParams({
      timestamp: seconds,
      nonce: '7',
      msg_signature: getSignature('wecom-token', seconds, '7', ciphertext),
    });
    expect(
      (
        await fetch(`${url}/webhooks/wecom?${wecom}`, {
          method: 'POST',
          headers: { 'content-type': 'text/xml' },
          body: `<xml><ToUserName><![CDATA[${CORP_ID}]]></ToUserName><Encrypt><![CDATA[${ciphertext}]]></Encrypt></xml>`,
        })
      ).status,
    ).toBe(200);

    const feishu = fixture('feishu', 'text-p2p.json') as any;
    feishu.header = { ...feishu.header, token: 'fs-token' };
    feishu.event.message.create_time = String(Date.now());
    expect((await postJson(`${url}/webhooks/fs`, feishu)).status).toBe(200);

    const now = Date.now();
    const dingtalk = { ...(fixture('dingtalk', 'text-single.json') as object), msgId: 'msg-console', createAt: now };
    const sign = createHmac('sha256', DT_SECRET).update(`${now}\n${DT_SECRET}`).digest('base64');
    expect((await postJson(`${url}/webhooks/dt`, dingtalk, { timestamp: String(now), sign })).status).toBe(200);
  }

  const row = (page: Page, channel: string) => page.locator(`#channels-table tr[data-channel="${channel}"]`);

  it('lists the WeChat, WeCom, Feishu and DingTalk channels with their counts once each took a delivery', async () => {
    const running = await startService({
      channels: [
        { id: 'wx', adapter: 'wechat', token: 'wx-token', appId: 'wx2c2769f8efd9abc2' },
        {
          id: 'wecom',
          adapter: 'wecom',
          token: 'wecom-token',
          corpId: CORP_ID,
          encodingAESKey: KEY,
          agentId: '1000002',
        },
        { id: 'fs', adapter: 'feishu', verificationToken: 'fs-token', appId: 'cli_a1b2c3' },
        { id: 'dt', adapter: 'dingtalk', appSecret: DT_SECRET, clientId: 'dingxq2ftr6iwcu6zzur' },
      ],
    });
    service = running;
    const { page } = await openConsole(chromium.browser, running.url, { timeoutMs: 10_000 });
    await page.locator('#channels-table td.empty', { hasText: 'No traffic yet.' }).waitFor();

    await deliverOneEach(running.url);
    await until(() =>
      ['wx', 'wecom', 'fs', 'dt'].every((channel) => running.intake.metrics.channelStats()[channel]?.received === 1),
    );
    await nextPoll(page, '/v1/stats');
    await page.waitForFunction(() => document.querySelectorAll('#channels-table tbody tr[data-channel]').length === 4);
    const channels = await page
      .locator('#channels-table tbody tr[data-channel]')
      .evaluateAll((rows: any[]) => rows.map((r) => r.dataset.channel));
    expect(channels).toEqual(['dt', 'fs', 'wecom', 'wx']);
    for (const channel of channels) {
      expect(await row(page, channel).locator('th').textContent()).toBe(channel);
      expect(await row(page, channel).locator('td[data-action="received"]').textContent()).toBe('1');
      expect(await row(page, channel).locator('td[data-action="rejected"]').textContent()).toBe('0');
    }
    await page.context().close();
  });
});
