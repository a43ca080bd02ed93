import { describe, expect, it } from 'vitest';
import { createIntake } from '../../src/index.js';
import type { InboundEvent } from '../../src/events/inbound.js';
import type { ProcessedMessage } from '../../src/events/output.js';
import { loadConfig } from '../../src/service/configure.js';
import { tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** A library intake (memory store, manual clock) whose private chats are in `mention` mode, wake word "bot". */
async function mentionIntake(file: Record<string, unknown> = {}) {
  const dir = tempDir();
  const clock = new ManualClock();
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: {
      store: 'memory',
      logLevel: 'silent',
      media: { dir: 'media' },
      debounce: { windowMs: 1000 },
      activation: { private: 'mention', wakeWords: ['bot'] },
      ...file,
    },
  });
  const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
  const outputs: ProcessedMessage[] = [];
  intake.on('chat.processedMessage', (output) => {
    outputs.push(output as ProcessedMessage);
  });
  const send = (body: Record<string, unknown>) =>
    intake.ingest('generic', {
      headers: { 'content-type': 'application/json' },
      query: new URLSearchParams(),
      now: clock.now(),
      body: Buffer.from(JSON.stringify(body)),
    });
  const done = async () => {
    await intake.close();
    dir.remove();
  };
  return { intake, clock, outputs, send, done };
}

describe('activation through the library (intake.use)', () => {
  it('shows each step whether a message addresses the bots, and lets a step address one itself', async () => {
    const { intake, clock, outputs, send, done } = await mentionIntake();
    const seen: Array<[string, boolean | undefined]> = [];
    intake.use(async (event: InboundEvent, next) => {
      seen.push([event.text, event.addressed]);
      if (event.text.includes('urgent')) event.addressed = true;
      await next();
    });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'just chatting' });
    await clock.advance(2000);
    await send({ id: 'm2', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot, what time is it' });
    await clock.advance(2000);
    await send({ id: 'm3', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'urgent: the site is down' });
    await clock.advance(2000);
    expect(seen).toEqual([
      ['just chatting', false],
      ['bot, what time is it', true],
      ['urgent: the site is down', false],
    ]);
    expect(outputs.map((output) => [output.content, output.trigger, output.context.map((m) => m.content)])).toEqual([
      ['bot, what time is it', 'wake', ['just chatting']],
      ['urgent: the site is down', 'pattern', []],
    ]);
    await done();
  });

  it('lets a step take back what addressed a message: it is kept as context', async () => {
    const { intake, clock, outputs, send, done } = await mentionIntake();
    intake.use(async (event: InboundEvent, next) => {
      if (event.text.includes('bottle')) event.addressed = false;
      await next();
    });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: '/bottle of wine' });
    await clock.advance(2000);
    expect(outputs).toEqual([]);
    await send({ id: 'm2', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot: and you?' });
    await clock.advance(2000);
    expect(outputs.map((output) => output.context.map((m) => m.content))).toEqual([['/bottle of wine']]);
    await done();
  });
});

describe('access through the library', () => {
  it('never shows a denied sender or conversation to an intake.use step or a handler: acknowledged, counted denied, kept nowhere', async () => {
    const { intake, clock, outputs, send, done } = await mentionIntake({
      activation: { private: 'always' },
      access: { deny: ['generic:spammer', 'cli:banned'] },
    });
    const seen: string[] = [];
    const handled: string[] = [];
    intake.use(async (event: InboundEvent, next) => {
      seen.push(event.text);
      await next();
    });
    intake.handle('!message', (event) => {
      handled.push(event.text);
    });
    const answers = [
      await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'spammer' }, content: 'buy followers' }),
      await send({ id: 'm2', sessionKey: 'cli:banned', sender: { id: 'u1' }, content: 'in a banned room' }),
      await send({ id: 'm3', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'hello' }),
    ];
    expect(answers.map((answer) => answer.body)).toEqual([
      { accepted: 0, duplicates: 0, events: [{ id: 'm1', verdict: 'ignored' }] },
      { accepted: 0, duplicates: 0, events: [{ id: 'm2', verdict: 'ignored' }] },
      { accepted: 1, duplicates: 0, events: [{ id: 'm3', verdict: 'accepted' }] },
    ]);
    await clock.advance(2000);
    expect(seen).toEqual(['hello']);
    expect(handled).toEqual(['hello']);
    expect(outputs.map((output) => [output.content, output.context])).toEqual([['hello', []]]);
    expect(await intake.metrics.scrape()).toMatch(/action="denied"\} 2/);
    await done();
  });
});

describe('context and agent turns', () => {
  it('carries the chatter before a batch held for an open turn in the output that batch becomes at its release', async () => {
    const { intake, clock, outputs, send, done } = await mentionIntake({ turns: { mode: 'collect' } });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot: first question' });
    await clock.advance(2000);
    expect(outputs.map((output) => output.content)).toEqual(['bot: first question']);
    // While the agent answers, the room talks, then asks again: that batch is held for the turn.
    await send({ id: 'm2', sessionKey: 'cli:a', sender: { id: 'u2' }, content: 'it is down for me too' });
    await clock.advance(2000);
    await send({ id: 'm3', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot: second question' });
    await clock.advance(2000);
    expect(outputs).toHaveLength(1);
    await intake.turnDone(outputs[0]!.id);
    await clock.advance(2000);
    expect(outputs.map((output) => [output.content, output.context.map((m) => m.content)])).toEqual([
      ['bot: first question', []],
      ['bot: second question', ['it is down for me too']],
    ]);
    await done();
  });
  it('keeps a held batch as context when its conversation was set to never before its release, and the next output carries it', async () => {
    const { intake, clock, outputs, send, done } = await mentionIntake({ turns: { mode: 'collect' } });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot: first question' });
    await clock.advance(2000);
    await send({ id: 'm2', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot: second question' });
    await clock.advance(2000);
    await intake.store.setActivation('cli:a', { private: 'never' }, clock.now());
    await intake.turnDone(outputs[0]!.id);
    await clock.advance(2000);
    expect(outputs).toHaveLength(1);
    await intake.store.setActivation('cli:a', undefined, clock.now());
    await send({ id: 'm3', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'bot: third question' });
    await clock.advance(2000);
    expect(outputs.map((output) => [output.content, output.context.map((m) => m.content)])).toEqual([
      ['bot: first question', []],
      ['bot: third question', ['bot: second question']],
    ]);
    expect(await intake.store.openBuffers()).toBe(0);
    await done();
  });
});

describe('access and our own bots', () => {
  it('still remembers a message of one of our bots that another received when allow names people only, so a reply to it is addressed', async () => {
    const { intake, clock, outputs, done } = await mentionIntake({
      activation: { group: 'mention' },
      access: { allow: ['qq:1'] },
      channels: [{ id: 'qq', adapter: 'onebot', namespace: 'qq', verify: false }],
    });
    const deliver = (selfId: number, id: number, user: number, message: unknown[]) =>
      intake.ingest('qq', {
        headers: { 'content-type': 'application/json' },
        query: new URLSearchParams(),
        now: clock.now(),
        body: Buffer.from(
          JSON.stringify({
            time: 1_718_000_000 + id,
            self_id: selfId,
            post_type: 'message',
            message_type: 'group',
            sub_type: 'normal',
            message_id: id,
            group_id: 555,
            user_id: user,
            sender: { user_id: user },
            message,
          }),
        ),
      });
    // Bot 20002 is ours (it delivers); bot 10001 receives what 20002 says in the group as message 7.
    await deliver(20002, 500, 1, [{ type: 'text', data: { text: 'hi' } }]);
    await deliver(10001, 7, 20002, [{ type: 'text', data: { text: 'the answer is 42' } }]);
    await clock.advance(2000);
    await deliver(10001, 8, 1, [
      { type: 'reply', data: { id: '7' } },
      { type: 'text', data: { text: 'why 42?' } },
    ]);
    await clock.advance(2000);
    expect(outputs.map((output) => [output.content, output.trigger])).toEqual([['why 42?', 'reply']]);
    await done();
  });
});
