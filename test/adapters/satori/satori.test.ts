import { describe, expect, it } from 'vitest';
import { createAdapter } from '../../../src/adapters/index.js';
import { decodeEntities, plainText, readElements } from '../../../src/adapters/satori/elements.js';
import type { RawDelivery } from '../../../src/adapters/kit/types.js';
import { correlationKey } from '../../../src/correlate/signature.js';
import { isIntakeError, isSignatureError } from '../../../src/core/errors.js';
import { loadConfig } from '../../../src/service/configure.js';
import { fixture } from '../../fixtures/index.js';

const NOW = 1_718_000_010_000;
const channel = (settings: Record<string, unknown>, id = 'sat', adapter = 'satori') =>
  loadConfig({ env: {}, file: { channels: [{ id, adapter, ...settings }] } }).channels[0]!;
const satori = (settings: Record<string, unknown> = {}) =>
  createAdapter(
    channel({ url: 'http://127.0.0.1:5140/satori', token: 'tok', namespaces: { onebot: 'qq' }, ...settings }),
  );
const delivery = (body: unknown, authenticated = true): RawDelivery => ({
  headers: {},
  body: Buffer.from(JSON.stringify(body)),
  query: new URLSearchParams(),
  now: NOW,
  authenticated,
});
const normalized = (body: unknown, adapter = satori()) => adapter.normalize(body, delivery(body));

describe('Satori elements', () => {
  it('reads text, mentions, images and line breaks as OneBot segments, entities decoded', () => {
    const { segments, media } = readElements(
      '<at id="10001" name="bot"/> 帮我 &lt;查&gt; &amp;&#x4E00;&#20108;<br/>下一行<img src="https://host/a.png?x=1&amp;y=2"/>',
    );
    expect(segments).toEqual([
      { type: 'at', data: { qq: '10001', name: 'bot' } },
      { type: 'text', data: { text: ' 帮我 <查> &一二\n下一行' } },
      { type: 'image', data: { url: 'https://host/a.png?x=1&y=2' } },
    ]);
    expect(media).toEqual([{ url: 'https://host/a.png?x=1&y=2', type: 'image' }]);
    expect(plainText(segments)).toBe('帮我 <查> &一二\n下一行');
  });

  it('takes a leading quote apart (its id, author and text) and keeps it out of the text', () => {
    const read = readElements('<quote id="m1"><author id="10001" name="bot"/>old <b>answer</b></quote>thanks');
    expect(read.quote).toEqual({ id: 'm1', senderId: '10001', text: 'old answer' });
    expect(plainText(read.segments)).toBe('thanks');
    expect(readElements('<quote id="m9"/>ok').quote).toEqual({ id: 'm9' });
  });

  it('reads @all, faces, forwards, files and internal: resources, and paragraphs as lines', () => {
    const read = readElements(
      '<p>one</p><p>two</p><at type="all"/><face id="14"><img src="https://x/face.png"/></face>' +
        '<message id="f1" forward><message><author id="1"/>hi</message></message>' +
        '<audio src="internal:onebot/10001/voice/abc"/><file src="https://x/f.pdf" title="f.pdf"/>',
    );
    expect(plainText(read.segments)).toBe('one\ntwo');
    expect(read.segments.slice(-5)).toEqual([
      { type: 'at', data: { qq: 'all' } },
      { type: 'face', data: { id: '14' } },
      { type: 'other', data: { type: 'forward', id: 'f1' } },
      { type: 'record', data: { url: 'internal:onebot/10001/voice/abc' } },
      { type: 'file', data: { url: 'https://x/f.pdf', name: 'f.pdf' } },
    ]);
    expect(read.media).toEqual([
      { ref: 'internal:onebot/10001/voice/abc', type: 'audio' },
      { url: 'https://x/f.pdf', type: 'document', fileName: 'f.pdf' },
    ]);
  });

  it('keeps a < that opens no tag, an unknown entity and an unclosed quote value as text', () => {
    expect(plainText(readElements('a < b <3 <at id="1 &unknown; x>y').segments)).toBe(
      'a < b <3 <at id="1 &unknown; x>y',
    );
    expect(decodeEntities('&amp;amp; &#1114112; &#xZZ;')).toBe('&amp; &#1114112; &#xZZ;');
  });

  // A scan that read on to the end from every "<" or "&" takes minutes on 1 MiB, so the test's
  // timeout of a few seconds fails it; it is the only bound on time here.
  it('reads 1 MiB of each hostile content in one pass, as the text it is', { timeout: 5_000 }, () => {
    for (const unit of ['<', '<a ', '<a b="', '&', '&a', '<quote id="q">', '<a x="1" ', '<p>']) {
      const raw = unit.repeat(Math.ceil(1_048_576 / unit.length));
      const read = readElements(raw);
      expect(read.segments.length, unit).toBeLessThan(2);
    }
    expect(plainText(readElements('<a b="'.repeat(1000)).segments)).toBe('<a b="'.repeat(1000));
  });
});

describe('Satori adapter', () => {
  it('refuses to start without its url or token (unless verify is false), and a bad namespace', () => {
    expect(() => channel({ token: 'tok' })).toThrow(/channels\[0\]\.url \(channel "sat"\): is required/);
    expect(() => channel({ url: 'http://127.0.0.1:5140/satori' })).toThrow(
      /channels\[0\]\.token \(channel "sat"\): is required: the satori adapter identifies to the Satori server with it/,
    );
    expect(() => channel({ url: 'ws://x', token: 't' })).toThrow(/must be an http:\/\/ or https:\/\/ URL/);
    expect(() => channel({ url: 'http://x', token: 't', namespaces: { onebot: 'q:q' } })).toThrow(
      /channels\[0\]\.namespaces\.onebot \(channel "sat"\): must be a namespace/,
    );
    expect(() => createAdapter(channel({ url: 'http://x', verify: false }))).not.toThrow();
  });

  it('refuses an HTTP POST: events come over the socket it dials', () => {
    const body = fixture('satori', 'message-group.json');
    let thrown: unknown;
    try {
      satori().verify(delivery(body, false));
    } catch (error) {
      thrown = error;
    }
    expect(isSignatureError(thrown) && thrown.status).toBe(401);
  });

  it('reads a group message: its login is the bot, the session is the mapped namespace and the channel', () => {
    const { events } = normalized(fixture('satori', 'message-group.json'));
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      kind: 'message',
      adapter: 'satori',
      namespace: 'qq',
      botId: '10001',
      sessionKey: 'qq:group:123456',
      conversation: { type: 'group', id: '123456' },
      sender: { id: '777', name: 'A' },
      platformId: 'onebot:10001:123456:m2',
      text: '帮我查一下 <订单> &',
      mentions: ['10001'],
      timestamp: 1718000000,
      fields: { message_id: 'm2', channel_id: '123456', guild_id: '123456', platform: 'onebot' },
    });
    expect(events[0]!.media).toEqual([
      { url: 'https://gchat.qpic.cn/gchatpic_new/0/0-0-3F9A1C2B7D0E4F5A6B7C8D9E0F1A2B3C/0?term=2', type: 'image' },
    ]);
  });

  it("reads a direct message (channel type 1) as private, and an unmapped platform's chats in the channel's namespace after the platform", () => {
    const body = fixture('satori', 'message-private.json');
    expect(normalized(body).events[0]).toMatchObject({ sessionKey: 'qq:private:777', text: 'hello\nsecond line' });
    expect(normalized(body, satori({ namespaces: {} })).events[0]).toMatchObject({
      namespace: 'satori',
      sessionKey: 'satori:onebot:private:777',
    });
  });

  it('names the quoted message as its own event names it, with its author', () => {
    const { events } = normalized(fixture('satori', 'message-quote.json'));
    expect(events[0]!.fields).toMatchObject({
      reply_to: 'onebot:10001:123456:m1',
      reply_to_sender: '10001',
      reply_to_text: 'earlier answer',
    });
    expect(events[0]!.text).toBe('thanks');
  });

  it('reads a deletion as a recall of the message, and an update as an edit of it', () => {
    const [recall] = normalized(fixture('satori', 'message-deleted.json')).events;
    expect(recall).toMatchObject({
      kind: 'notice',
      detail: 'group_recall',
      platformId: 'onebot:10001:123456:m2:deleted',
      revises: { kind: 'recall', messageId: 'onebot:10001:123456:m2', senderId: '777' },
      fields: { group_id: '123456', user_id: '777', operator_id: '777' },
    });
    const [edit] = normalized(fixture('satori', 'message-updated.json')).events;
    expect(edit).toMatchObject({
      kind: 'message',
      subType: 'edited',
      platformId: 'onebot:10001:123456:m2:edited:1718000005000',
      text: '(edited) 帮我查一下订单',
      revises: { kind: 'edit', messageId: 'onebot:10001:123456:m2', senderId: '777' },
      fields: { edited_text: '帮我查一下订单' },
    });
  });

  it("remembers the bot's own message instead of taking it in", () => {
    const body = fixture('satori', 'message-private.json');
    body.body.user.id = '10001';
    expect(normalized(body)).toMatchObject({
      events: [],
      ignored: 1,
      sent: [{ namespace: 'qq', messageId: 'onebot:10001:private:777:m3', botId: '10001' }],
    });
  });

  it('reads member and request events as notices and requests, and logins as bots for actions', async () => {
    const adapter = satori();
    expect(normalized(fixture('satori', 'guild-member-added.json'), adapter).events[0]).toMatchObject({
      kind: 'notice',
      detail: 'guild-member-added',
      sessionKey: 'qq:group:123456',
      fields: { group_id: '123456', user_id: '779', operator_id: '777' },
    });
    expect(normalized(fixture('satori', 'friend-request.json'), adapter).events[0]).toMatchObject({
      kind: 'request',
      detail: 'friend-request',
      text: 'let me in',
      fields: { message_id: 'flag-1', user_id: '780' },
    });
    expect(normalized(fixture('satori', 'login-updated.json'), adapter)).toEqual({ events: [], ignored: 1 });
    const routed = await adapter.actionApi!.route!('message.create', { channel_id: '1', content: 'x' }, '10001');
    expect(routed).toMatchObject({
      method: 'POST',
      path: '/message.create',
      headers: { 'satori-platform': 'onebot', 'satori-user-id': '10001' },
    });
  });

  it('refuses an action that is no <resource>.<method>, or names an unknown login', async () => {
    const adapter = satori();
    const refusal = async (action: string, bot?: string) => {
      try {
        await adapter.actionApi!.route!(action, {}, bot);
      } catch (error) {
        return isIntakeError(error) ? { status: error.status, code: error.code } : error;
      }
      return undefined;
    };
    expect(await refusal('../admin')).toEqual({ status: 400, code: 'bad_action' });
    expect(await refusal('message.create', '999')).toEqual({ status: 404, code: 'bot_not_connected' });
  });

  it('refuses an event without its login, channel or author with a 400 naming the field', () => {
    const body = fixture('satori', 'message-group.json');
    delete body.body.login;
    delete body.body.platform;
    expect(() => normalized(body)).toThrow(/body\.login\.platform is required/);
    const anonymous = fixture('satori', 'message-group.json');
    delete anonymous.body.user;
    expect(() => normalized(anonymous)).toThrow(/body\.user is required/);
  });

  it('gives a OneBot bot and a Satori onebot login in one QQ group one correlation key', () => {
    const onebot = createAdapter(channel({ verify: false, botIds: ['10002'] }, 'ob', 'onebot'));
    const group = {
      time: 1718000000,
      self_id: 10002,
      post_type: 'message',
      message_type: 'group',
      sub_type: 'normal',
      message_id: 555,
      group_id: 123456,
      user_id: 777,
      message: [
        { type: 'at', data: { qq: '10001' } },
        { type: 'text', data: { text: ' 帮我查一下 <订单> & ' } },
        {
          type: 'image',
          data: {
            file: '3F9A1C2B7D0E4F5A6B7C8D9E0F1A2B3C.jpg',
            url: 'https://gchat.qpic.cn/gchatpic_new/0/0-0-3F9A1C2B7D0E4F5A6B7C8D9E0F1A2B3C/0?term=2',
          },
        },
      ],
      raw_message: '',
      font: 0,
      sender: { user_id: 777, nickname: 'Ana' },
    };
    const [ob] = onebot.normalize(group, delivery(group)).events;
    const [sat] = normalized(fixture('satori', 'message-group.json')).events;
    expect(correlationKey(sat!)).toBe(correlationKey(ob!));
  });
});
