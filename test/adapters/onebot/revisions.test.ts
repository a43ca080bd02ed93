import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { channelOf, normalizedBody, normalizedFixture } from '../normalized.js';

describe('OneBot: recalls name the message they take back, and messages our account sent name their session', () => {
  it('makes a group_recall a notice revising the recalled message by the platform id its own event had, in its session', () => {
    const adapter = channelOf('onebot');
    const [message] = normalizedFixture(adapter, 'onebot', 'napcat-group.json').events;
    const [recall] = normalizedFixture(adapter, 'onebot', 'notice-recall.json').events;
    expect(recall).toMatchObject({ kind: 'notice', detail: 'group_recall', sender: { id: '12345678' } });
    expect(recall!.revises).toEqual({ kind: 'recall', messageId: message!.platformId, senderId: '12345678' });
    expect(recall!.sessionKey).toBe(message!.sessionKey);
  });

  it('makes a friend_recall revise the private message it takes back, in that chat', () => {
    const adapter = channelOf('onebot');
    const [message] = normalizedFixture(adapter, 'onebot', 'private-vector.json').events;
    const [recall] = normalizedBody(adapter, {
      time: 1718000005,
      self_id: 10001000,
      post_type: 'notice',
      notice_type: 'friend_recall',
      user_id: 12345678,
      message_id: 12,
    }).events;
    expect(recall!.revises).toEqual({ kind: 'recall', messageId: message!.platformId, senderId: '12345678' });
    expect(recall!.sessionKey).toBe(message!.sessionKey);
  });

  it('leaves other notices without a revision', () => {
    const [poke] = normalizedFixture(channelOf('onebot'), 'onebot', 'notice-poke.json').events;
    expect(poke!.revises).toBeUndefined();
  });

  it("names a group message_sent's session as the group's messages have it", () => {
    const adapter = channelOf('onebot');
    const [message] = normalizedFixture(adapter, 'onebot', 'napcat-group.json').events;
    const { sent } = normalizedFixture(adapter, 'onebot', 'message-sent.json');
    expect(sent![0]!.sessionKey).toBe(message!.sessionKey);
  });

  it('names the peer of a private message_sent by target_id, user_id being the bot (NapCat)', () => {
    const adapter = channelOf('onebot');
    const [message] = normalizedFixture(adapter, 'onebot', 'private-vector.json').events;
    const { sent } = normalizedBody(adapter, {
      post_type: 'message_sent',
      message_sent_type: 'self',
      self_id: 10001000,
      user_id: 10001000,
      target_id: 12345678,
      message_type: 'private',
      sub_type: 'friend',
      message_id: 13,
      message: [{ type: 'text', data: { text: 'hi' } }],
      raw_message: 'hi',
    });
    expect(sent).toEqual([
      { namespace: 'qq', messageId: '13', botId: '10001000', content: 'hi', sessionKey: message!.sessionKey },
    ]);
    expect(message!.sessionKey).toBe('qq:12345678');
  });

  it('names no session for a private message_sent that names no peer but the bot', () => {
    const body = { ...(fixture('onebot', 'message-sent.json') as Record<string, unknown>) };
    delete body.group_id;
    body.message_type = 'private';
    const { sent } = normalizedBody(channelOf('onebot'), body);
    expect(sent![0]!.sessionKey).toBeUndefined();
  });
});
