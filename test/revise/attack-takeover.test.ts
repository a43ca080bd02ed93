import type { ServerResponse } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { postJson, until } from '../support/helpers.js';
import { serve, type TestServer } from '../support/servers.js';
import { A, GROUP, Harness } from './attack-support.js';

/*
 * A human taking over and typing (contract §13) met as a careless or hostile client meets them:
 * an echo storm of the bot account's own messages, a typing flood, the takeover routes with odd
 * session keys and bodies, a takeover ended that never started.
 */
describe('takeovers and typing under attack', () => {
  let h: Harness;
  // A fake NapCat: each send answers with the next message id, or waits while `holding`.
  let napcat: TestServer;
  let nextId = 901;
  let holding = false;
  const held: Array<{ res: ServerResponse; id: number }> = [];
  const answer = (res: ServerResponse, id: number) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ status: 'ok', retcode: 0, data: { message_id: id } }));
  };
  beforeAll(async () => {
    napcat = await serve((req, res) => {
      req.resume();
      const id = nextId++;
      if (holding) held.push({ res, id });
      else answer(res, id);
    });
  });
  afterAll(() => napcat.close());
  afterEach(async () => {
    holding = false;
    for (const { res, id } of held.splice(0)) answer(res, id);
    await h?.stop();
  });

  /** The group's channel with its sends through us (botIds and a NapCat API), so what the account sends besides is a person's. */
  const relaying = () =>
    new Harness().start({
      channels: [
        {
          id: 'qq',
          adapter: 'onebot',
          namespace: 'qq',
          verify: false,
          apiUrl: `http://127.0.0.1:${napcat.port}`,
          botIds: [String(A)],
        },
      ],
    });
  const send = (text: string) =>
    postJson(`${h.service.url}/v1/channels/qq/actions/send_group_msg`, { group_id: GROUP, message: text });

  const sent = (id: number, text: string) => ({
    time: 1_718_000_050,
    self_id: A,
    post_type: 'message_sent',
    message_type: 'group',
    message_id: id,
    group_id: GROUP,
    user_id: A,
    message: [{ type: 'text', data: { text } }],
  });

  const takeoverUrl = (key: string) => `${h.service.url}/v1/sessions/${encodeURIComponent(key)}/takeover`;
  const put = (key: string, body?: string) =>
    fetch(takeoverUrl(key), {
      method: 'PUT',
      headers: { 'content-type': 'application/json', 'x-requested-with': 'test' },
      ...(body === undefined ? {} : { body }),
    });
  const told = async () => (await h.ofType('chat.takeover')).map((o) => 'active' in o && [o.sessionKey, o.active]);

  it('holds a session at most maxMs from its first message however long an echo storm goes on', async () => {
    h = await relaying();
    expect((await send('the agent speaking')).status).toBe(200);
    await h.flushed(5_000); // past the agent's send in flight, whose reports are the agent's
    const key = `qq:group:${GROUP}`;
    const started = h.clock.now();
    // One echo every 500 ms for 30 s: holdMs 5 s, maxMs 20 s.
    for (let i = 0; i < 60; i++) {
      await h.postOk(sent(1000 + i, `echo ${i}`));
      const seen = (await (await fetch(takeoverUrl(key))).json()) as { takeover: { since: number; until: number } };
      expect(seen.takeover.until - seen.takeover.since).toBeLessThanOrEqual(20_000);
      await h.flushed(500);
    }
    const states = await told();
    // Started, ended at maxMs, started again by the storm: never more than one start per maxMs.
    expect(states.filter((state) => state && state[1] === true).length).toBeLessThanOrEqual(2);
    expect(states[0]).toEqual([key, true]);
    expect(h.clock.now() - started).toBeGreaterThanOrEqual(30_000);
  });

  it('never holds a buffer past maxWaitMs from its first part however often its sender types', async () => {
    h = await new Harness().start();
    await h.postOk({
      time: 1_718_000_000,
      self_id: A,
      post_type: 'message',
      message_type: 'private',
      sub_type: 'friend',
      message_id: 1,
      user_id: 42,
      sender: { user_id: 42, nickname: 'friend' },
      message: [{ type: 'text', data: { text: 'typing forever' } }],
    });
    const typing = { post_type: 'notice', notice_type: 'notify', sub_type: 'input_status', user_id: 42, event_type: 1 };
    for (let ms = 0; ms < 3000; ms += 100) {
      await h.postOk({ ...typing, time: 1_718_000_000, self_id: A });
      await h.clock.advance(100);
    }
    await h.service.intake.settle();
    expect(await h.contents()).toEqual(['typing forever']);
  });

  it('starts and ends a takeover by hand on session keys no channel has, answering for each', async () => {
    h = await new Harness().start();
    for (const key of ['nocolon', 'zz:unknown', 'qq:group:x'.padEnd(512, 'y')]) {
      const started = await put(key);
      expect(started.status).toBe(200);
      expect(await started.json()).toMatchObject({ sessionKey: key, takeover: { active: true } });
      const ended = await fetch(takeoverUrl(key), { method: 'DELETE', headers: { 'x-requested-with': 'test' } });
      expect(await ended.json()).toMatchObject({ sessionKey: key, takeover: null, ended: { since: h.clock.now() } });
    }
    await h.flushed(60);
    // each told, start then end
    const states = await told();
    for (const key of ['nocolon', 'zz:unknown', 'qq:group:x'.padEnd(512, 'y')]) {
      expect(states.filter((state) => state && state[0] === key)).toEqual([
        [key, true],
        [key, false],
      ]);
    }
  });

  // A key of no channel's namespace: its chat.takeover events are told on no channel ('').
  it('tells chat.takeover at the start and the end of a takeover by hand on a key of no namespace', async () => {
    h = await new Harness().start();
    await put('zz:unknown');
    await fetch(takeoverUrl('zz:unknown'), { method: 'DELETE', headers: { 'x-requested-with': 'test' } });
    for (let i = 0; i < 10; i++) await h.flushed(60_000);
    expect(await h.service.intake.store.openBuffers()).toBe(0);
    expect(await told()).toEqual([
      ['zz:unknown', true],
      ['zz:unknown', false],
    ]);
  });

  // A generic message's session key is used as given (`cli:ann` on a channel of namespace
  // `generic`): its session is held by hand, yet the start and the end are never told.
  it('tells chat.takeover for a generic channel session taken over by hand', async () => {
    h = await new Harness().start({ channels: [{ id: 'generic', adapter: 'generic' }] });
    await h.postOk({ sessionKey: 'cli:ann', content: 'hello' }, 'generic');
    await h.flushed();
    expect(await h.contents()).toEqual(['hello']);
    expect((await put('cli:ann')).status).toBe(200);
    await h.postOk({ sessionKey: 'cli:ann', content: 'held back' }, 'generic');
    await h.flushed();
    expect(await h.contents()).toEqual(['hello']);
    expect(await told()).toEqual([['cli:ann', true]]);
  });

  it('refuses odd session keys and bodies with a 400, starting nothing', async () => {
    h = await new Harness().start();
    expect((await put('x'.repeat(513))).status).toBe(400);
    expect((await put('a\u0000b')).status).toBe(400);
    const url = `${h.service.url}/v1/sessions/%FF/takeover`;
    expect((await fetch(url, { method: 'PUT', headers: { 'x-requested-with': 'test' } })).status).toBe(400);
    for (const body of [
      'null',
      '[]',
      '"x"',
      '5000',
      '{"holdMs":0}',
      '{"holdMs":1.5}',
      '{"holdMs":"5000"}',
      '{"holdMs":1e400}',
      '{"holdMs":20001}',
      '{"holdMs":5000,"extra":1}',
      '{"__proto__":{"holdMs":1}}',
      '{',
    ]) {
      const answer = await put('qq:group:1', body);
      expect([body, answer.status]).toEqual([body, 400]);
    }
    await h.flushed(60);
    expect(await told()).toEqual([]);
    expect(await (await fetch(takeoverUrl('qq:group:1'))).json()).toMatchObject({ takeover: null });
  });

  it('ends nothing and tells nothing for a DELETE of a takeover never started, however often', async () => {
    h = await new Harness().start();
    for (let i = 0; i < 3; i++) {
      const answer = await fetch(takeoverUrl(`qq:group:${GROUP}`), {
        method: 'DELETE',
        headers: { 'x-requested-with': 'test' },
      });
      expect(answer.status).toBe(200);
      expect(await answer.json()).toMatchObject({ takeover: null, ended: null });
    }
    await h.flushed(60);
    expect(await told()).toEqual([]);
  });

  it('never shortens a takeover by a second PUT with a shorter hold', async () => {
    h = await new Harness().start();
    const key = `qq:group:${GROUP}`;
    await put(key, '{"holdMs":15000}');
    const again = (await (await put(key, '{"holdMs":1000}')).json()) as { takeover: { until: number } };
    expect(again.takeover.until).toBe(h.clock.now() + 15_000);
    await h.flushed(2000);
    await h.say(1, 7, 'still held');
    await h.flushed();
    expect(await h.contents()).toEqual([]);
  });

  // A send in flight covers its bot's reports until its answer names the message; the first
  // answer of two sends in flight at once clears the mark for both, so the report of the second
  // (NapCat reports message_sent before the action's answer) is taken for a person's message.
  it('takes no report of the agent own second send for a person while the two sends are in flight', async () => {
    h = await relaying();
    holding = true;
    const first = send('first answer');
    const second = send('second answer');
    await until(() => held.length === 2);
    holding = false;
    const [one, two] = held.splice(0);
    answer(one!.res, one!.id);
    expect((await first).status).toBe(200);
    // The bot reports the second send before answering it.
    await h.postOk(sent(two!.id, 'second answer'));
    answer(two!.res, two!.id);
    expect((await second).status).toBe(200);
    await h.flushed(60);
    expect(await told()).toEqual([]);
  });
});
