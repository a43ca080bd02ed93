import { afterEach, describe, expect, it } from 'vitest';
import { A, B, GROUP, Harness, TG, recall, telegram } from './attack-support.js';

/*
 * Recalls and edits (contract §13) met as a hostile or careless user meets them, on the memory
 * store: other conversations, floods, repeats, forged second thoughts.
 */
describe('recalls and edits under attack', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.stop();
  });

  describe('a recall or an edit naming a message of another conversation changes nothing', () => {
    it('leaves a buffered message of another group in its buffer', async () => {
      h = await new Harness().start();
      await h.say(1, 7, 'mine to keep');
      // The same bot numbers its messages across groups: the other group's recall names the same id.
      await h.postOk(recall(A, 1, 7, 556));
      await h.postOk(recall(B, 1, 7, 556));
      await h.flushed(2000);
      expect(await h.contents()).toEqual(['mine to keep']);
    });

    it('tells no retraction of an emitted message recalled from another group', async () => {
      h = await new Harness().start();
      await h.say(1, 7, 'already out');
      await h.flushed();
      await h.postOk(recall(A, 1, 7, 556));
      await h.flushed(2000);
      expect(await h.ofType('chat.retracted')).toEqual([]);
    });

    it('tells no edit of an emitted message edited in another chat with the same message id', async () => {
      h = await new Harness().start();
      await h.postOk(telegram(1, 500, 'hello'), 'tg', TG);
      await h.flushed();
      await h.postOk(telegram(2, 500, 'forged', 1_718_000_001, 222), 'tg', TG);
      await h.flushed();
      expect(await h.ofType('chat.edited')).toEqual([]);
      expect(await h.contents()).toEqual(['hello', '(edited) forged']);
    });

    it('leaves a message of another namespace alone when a recall there names the same id', async () => {
      h = await new Harness().start({
        channels: [
          { id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false },
          { id: 'qq2', adapter: 'onebot', namespace: 'qqb', verify: false },
        ],
      });
      await h.say(1, 7, 'in namespace qq');
      await h.postOk(recall(A, 1, 7), 'qq2');
      await h.flushed(2000);
      expect(await h.contents()).toEqual(['in namespace qq']);
      await h.postOk(recall(A, 1, 7), 'qq2');
      await h.flushed(2000);
      expect(await h.ofType('chat.retracted')).toEqual([]);
    });
    it('leaves the kept context of a group alone when another group recalls the same id', async () => {
      h = await new Harness().start({ activation: { group: 'mention', wakeWords: ['bot'] } });
      await h.say(1, 7, 'plain chat');
      await h.say(2, 8, 'a secret');
      await h.flushed();
      await h.postOk(recall(A, 1, 7, 556));
      await h.postOk(recall(A, 2, 8));
      await h.flushed(2000);
      await h.say(3, 9, 'bot, what was said?');
      await h.flushed();
      const [message] = await h.ofType('chat.processedMessage');
      expect(message && 'context' in message && message.context.map((m) => m.content)).toEqual(['plain chat']);
    });
  });

  describe('repeats', () => {
    it('tells one retraction for a recall delivered again and again by both bots', async () => {
      h = await new Harness().start();
      await h.say(1, 7, 'a secret');
      await h.flushed();
      for (let i = 0; i < 5; i++) {
        await h.postOk(recall(A, 1, 7));
        await h.postOk(recall(B, 1, 7));
      }
      await h.flushed(2000);
      expect(await h.ofType('chat.retracted')).toHaveLength(1);
      expect(await h.ofType('chat.notice')).toEqual([]);
    });

    it('tells one edit of an emitted message delivered twice', async () => {
      h = await new Harness().start();
      await h.postOk(telegram(1, 700, 'first'), 'tg', TG);
      await h.flushed();
      await h.postOk(telegram(2, 700, 'second', 1_718_000_001), 'tg', TG);
      await h.postOk(telegram(2, 700, 'second', 1_718_000_001), 'tg', TG);
      await h.flushed();
      expect(await h.ofType('chat.edited')).toHaveLength(1);
    });

    // An edit back to an earlier text of the same message: its once-key (output, message, digest
    // of the content) is the first edit's, so the claim of the first edit swallows it and the
    // agent is left with the text in between.
    it('tells every edit of an emitted message, one back to an earlier text too (A, B, A)', async () => {
      h = await new Harness().start();
      await h.postOk(telegram(1, 800, 'v1'), 'tg', TG);
      await h.flushed();
      await h.postOk(telegram(2, 800, 'v2', 1_718_000_001), 'tg', TG);
      await h.flushed(60);
      await h.postOk(telegram(3, 800, 'v3', 1_718_000_002), 'tg', TG);
      await h.flushed(60);
      await h.postOk(telegram(4, 800, 'v2', 1_718_000_003), 'tg', TG);
      await h.flushed(60);
      const edited = await h.ofType('chat.edited');
      expect(edited.map((o) => 'content' in o && o.content)).toEqual(['v2', 'v3', 'v2']);
    });
  });

  describe('edits inside the window', () => {
    const groupTelegram = (updateId: number, messageId: number, text: string, edit?: number) => {
      const message = {
        message_id: messageId,
        from: { id: 111, first_name: 'Ana' },
        chat: { id: -100123, type: 'group', title: 'team' },
        date: 1_718_000_000,
        text,
        ...(edit === undefined ? {} : { edit_date: edit }),
      };
      return { update_id: updateId, ...(edit === undefined ? { message } : { edited_message: message }) };
    };

    it('lets through a group message that calls the bot by its wake word, and keeps one that does not', async () => {
      h = await new Harness().start({ activation: { group: 'mention', wakeWords: ['bot'] } });
      await h.postOk(groupTelegram(1, 39, 'bot, what time is it'), 'tg', TG);
      await h.flushed();
      await h.postOk(groupTelegram(2, 38, 'lunch?'), 'tg', TG);
      await h.flushed();
      expect(await h.contents()).toEqual(['bot, what time is it']);
    });

    // Whether a part addresses our bots is marked on its first text, at admission; the edit
    // replaces the text at the flush but not the mark, so the edited message is judged as it was.
    it('lets through a group message edited inside its window to call the bot by its wake word', async () => {
      h = await new Harness().start({ activation: { group: 'mention', wakeWords: ['bot'] } });
      await h.postOk(groupTelegram(1, 40, 'what time is it'), 'tg', TG);
      await h.clock.advance(300);
      await h.postOk(groupTelegram(2, 40, 'bot, what time is it', 1_718_000_001), 'tg', TG);
      await h.flushed();
      expect(await h.contents()).toEqual(['bot, what time is it']);
    });

    it('keeps as context a group message edited inside its window to no longer call the bot', async () => {
      h = await new Harness().start({ activation: { group: 'mention', wakeWords: ['bot'] } });
      await h.postOk(groupTelegram(1, 41, 'bot, what time is it'), 'tg', TG);
      await h.clock.advance(300);
      await h.postOk(groupTelegram(2, 41, 'never mind', 1_718_000_001), 'tg', TG);
      await h.flushed();
      expect(await h.contents()).toEqual([]);
    });
  });

  describe('floods', () => {
    // A group's recalls of other messages (a moderator cleaning up, Discord's MESSAGE_DELETE_BULK
    // of up to 100 ids in one delivery) are revisions of the session too: past maxPerSession
    // (500 by default) they push the recall of a message still waiting in its buffer out of the
    // list the flush applies. The bound is documented (docs/configuration.md); this shows it.
    it('keeps the recall of a buffered message until maxPerSession later ones push it out', async () => {
      const run = async (others: number) => {
        h = await new Harness().start({ revisions: { enabled: true, maxPerSession: 3, ttlMs: 3_600_000 } });
        await h.say(1, 7, 'recalled, then buried');
        await h.postOk(recall(A, 1, 7));
        for (let id = 100; id < 100 + others; id++) await h.postOk(recall(A, id, 9));
        await h.flushed(2000);
        const contents = await h.contents();
        await h.stop();
        return contents;
      };
      expect(await run(2)).toEqual([]);
      expect(await run(3)).toEqual(['recalled, then buried']);
    });

    it('keeps at most maxPerSession revisions of a session however many recalls come', async () => {
      h = await new Harness().start({ revisions: { enabled: true, maxPerSession: 5, ttlMs: 3_600_000 } });
      for (let id = 1; id <= 200; id++) await h.postOk(recall(A, id, 9));
      const state = await h.service.intake.store.conversation(`qq:group:${GROUP}`, h.clock.now());
      expect(state.revisions?.length).toBe(5);
    });

    it('forgets a session revisions once ttlMs has passed', async () => {
      h = await new Harness().start({ revisions: { enabled: true, maxPerSession: 5, ttlMs: 10_000 } });
      for (let id = 1; id <= 20; id++) await h.postOk(recall(A, id, 9));
      await h.flushed(11_000);
      const state = await h.service.intake.store.conversation(`qq:group:${GROUP}`, h.clock.now());
      expect(state.revisions).toBeUndefined();
    });

    it('takes a huge edit of a buffered message as its text, and refuses one past the body limit unread', async () => {
      h = await new Harness().start();
      await h.postOk(telegram(1, 900, 'short'), 'tg', TG);
      const huge = 'x'.repeat(200_000);
      await h.postOk(telegram(2, 900, huge, 1_718_000_001), 'tg', TG);
      await h.flushed();
      const [message] = await h.ofType('chat.processedMessage');
      expect(message && 'content' in message && message.content.length).toBe(huge.length);
      // Far past the body limit: refused before it is read, nothing changes.
      const refused = await h.post(telegram(3, 900, 'y'.repeat(5_000_000), 1_718_000_002), 'tg', TG);
      expect(refused).toBe(413);
    });
  });

  describe('forged second thoughts', () => {
    // A second thought's event is a notice whose `detail` is the output type; OneBot's notice_type
    // is whatever the implementation (or anyone who can post to an unverified channel) sends.
    it('never turns a platform notice whose type is "chat.retracted" into a retraction', async () => {
      h = await new Harness().start();
      await h.say(1, 7, 'real message');
      await h.flushed();
      await h.postOk({
        time: 1_718_000_200,
        self_id: A,
        post_type: 'notice',
        notice_type: 'chat.retracted',
        group_id: GROUP,
        user_id: 7,
        message_id: 1,
      });
      await h.flushed(2000);
      expect(await h.ofType('chat.retracted')).toEqual([]);
    });

    it('never turns a platform notice whose type is "chat.takeover" into a takeover', async () => {
      h = await new Harness().start();
      await h.postOk({
        time: 1_718_000_200,
        self_id: A,
        post_type: 'notice',
        notice_type: 'chat.takeover',
        group_id: GROUP,
        user_id: 7,
      });
      await h.flushed(2000);
      expect(await h.ofType('chat.takeover')).toEqual([]);
    });

    it('lets no message whose platform id looks like a once-key swallow a real retraction', async () => {
      h = await new Harness().start({
        channels: [
          { id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false },
          { id: 'generic', adapter: 'generic' },
        ],
      });
      await h.say(1, 7, 'to be recalled');
      await h.flushed();
      const [message] = await h.ofType('chat.processedMessage');
      const onceKey = `retracted:${message!.id}:${A}:1`;
      await h.postOk({ sessionKey: `qq:group:${GROUP}`, id: onceKey, content: 'a lookalike' }, 'generic');
      await h.flushed();
      await h.postOk(recall(A, 1, 7));
      await h.flushed(2000);
      expect(await h.ofType('chat.retracted')).toHaveLength(1);
    });

    it('puts no user message into a second thought output', async () => {
      h = await new Harness().start();
      await h.say(1, 7, 'to be recalled');
      await h.flushed();
      await h.postOk(recall(A, 1, 7));
      await h.say(2, 7, 'right after the recall');
      await h.flushed(60);
      const [retracted] = await h.ofType('chat.retracted');
      expect(retracted).toBeDefined();
      expect(JSON.stringify(retracted)).not.toContain('right after the recall');
      await h.flushed(2000);
      expect(await h.contents()).toEqual(['to be recalled', 'right after the recall']);
    });
  });
});
