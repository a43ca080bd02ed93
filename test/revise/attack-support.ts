import { expect } from 'vitest';
import { outputOf, type Output } from '../../src/events/output.js';
import { postJson, startService, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * A QQ group delivered by two bots of ours (A and B, one OneBot channel; B numbers messages at
 * A's number + 50,000), and a Telegram chat: the setup of second-thoughts.e2e.test.ts, shared
 * by the attack tests of recalls, edits and takeovers.
 */
export const GROUP = 555;
export const A = 10001;
export const B = 20002;
export const TG = { 'x-telegram-bot-api-secret-token': 'tg_secret-1' };

export function groupMessage(selfId: number, id: number, user: number, text: string, group = GROUP) {
  return {
    time: 1_718_000_000 + id,
    self_id: selfId,
    post_type: 'message',
    message_type: 'group',
    sub_type: 'normal',
    message_id: selfId === A ? id : id + 50_000,
    group_id: group,
    user_id: user,
    sender: { user_id: user, nickname: `member ${user}` },
    message: [{ type: 'text', data: { text } }],
  };
}

export function recall(selfId: number, id: number, user: number, group = GROUP) {
  return {
    time: 1_718_000_100 + id,
    self_id: selfId,
    post_type: 'notice',
    notice_type: 'group_recall',
    group_id: group,
    user_id: user,
    operator_id: user,
    message_id: selfId === A ? id : id + 50_000,
  };
}

export function telegram(updateId: number, messageId: number, text: string, edit?: number, chat = 111) {
  const message = {
    message_id: messageId,
    from: { id: chat, first_name: 'Ana' },
    chat: { id: chat, type: 'private' },
    date: 1_718_000_000,
    text,
    ...(edit === undefined ? {} : { edit_date: edit }),
  };
  return { update_id: updateId, ...(edit === undefined ? { message } : { edited_message: message }) };
}

export const channels = [
  { id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false },
  {
    id: 'tg',
    adapter: 'telegram',
    secretToken: 'tg_secret-1',
    botToken: '123456:ABC',
    apiBaseUrl: 'http://127.0.0.1:9',
  },
];

/** A service on a manual clock, and what a test does with it. */
export class Harness {
  service!: Running;
  clock = new ManualClock();

  async start(config: Record<string, unknown> = {}, dir?: string): Promise<this> {
    this.service = await startService(
      {
        store: 'memory',
        debounce: { windowMs: 1000, maxWaitMs: 3000 },
        takeover: { holdMs: 5000, maxMs: 20_000 },
        channels,
        ...config,
      },
      { clock: this.clock, ...(dir === undefined ? {} : { dir }) },
    );
    return this;
  }

  private stopped = false;

  /** Stop the service (once: a test that restarts stops it itself before its teardown does). */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true;
    await this.service?.stop();
  }

  async post(body: unknown, channel = 'qq', headers: Record<string, string> = {}): Promise<number> {
    const answer = await postJson(`${this.service.url}/webhooks/${channel}`, body, headers);
    return answer.status;
  }

  async postOk(body: unknown, channel = 'qq', headers: Record<string, string> = {}): Promise<void> {
    expect(await this.post(body, channel, headers)).toBeLessThan(300);
  }

  /** Both bots deliver a member's message. */
  async say(id: number, user: number, text: string, group = GROUP): Promise<void> {
    await this.postOk(groupMessage(A, id, user, text, group));
    await this.postOk(groupMessage(B, id, user, text, group));
  }

  async outputs(): Promise<Output[]> {
    return (await this.service.intake.store.outboxAfter(0, 10_000)).map((record) => outputOf(record));
  }

  async ofType(type: Output['type']): Promise<Output[]> {
    return (await this.outputs()).filter((output) => output.type === type);
  }

  async contents(): Promise<unknown[]> {
    return (await this.ofType('chat.processedMessage')).map((o) => 'content' in o && o.content);
  }

  /** Past the window (60: past the flush scheduler's grid, for what is due at once), and the flush done. */
  async flushed(ms = 1100): Promise<void> {
    await this.clock.advance(ms);
    await this.service.intake.settle();
  }
}
