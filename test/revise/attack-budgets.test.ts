import { afterEach, describe, expect, it } from 'vitest';
import { A, B, Harness, recall } from './attack-support.js';

/*
 * Second thoughts (contract §13) meet the budgets (§12) at their flush, as any batch does: a
 * retraction is not a message of the user's, yet it spends from the conversation's budget and,
 * over it, is dropped or merged with the messages that follow.
 */
describe('second thoughts over a budget', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.stop();
  });

  const once = (action: 'drop' | 'merge') => ({
    budgets: [{ per: 'conversation', limit: 1, windowMs: 60_000, action }],
  });

  // Over a `drop` budget the chat.retracted batch is kept as context: the agent never hears it.
  it('tells the retraction of a message emitted just before, over a drop budget', async () => {
    h = await new Harness().start(once('drop'));
    await h.say(1, 7, 'the one message the budget allows');
    await h.flushed();
    await h.postOk(recall(A, 1, 7));
    await h.postOk(recall(B, 1, 7));
    await h.flushed(2000);
    expect(await h.ofType('chat.retracted')).toHaveLength(1);
  });

  // Over a `merge` budget the chat.retracted batch waits in the session's budget buffer and the
  // user's next message joins it: the merged batch's first part is the second thought, so it is
  // committed as a chat.retracted alone and the user's message is never emitted.
  it('never swallows a user message merged with a retraction over a merge budget', async () => {
    h = await new Harness().start(once('merge'));
    await h.say(1, 7, 'first');
    await h.flushed();
    await h.postOk(recall(A, 1, 7));
    await h.flushed(60);
    await h.say(2, 7, 'second, after the recall');
    await h.flushed(2000);
    await h.flushed(60_000);
    await h.flushed(60_000);
    const contents = await h.contents();
    expect(contents.some((content) => String(content).includes('second, after the recall'))).toBe(true);
  });

  it('never emits a message recalled while it waits in its session budget buffer', async () => {
    h = await new Harness().start(once('merge'));
    await h.say(1, 7, 'first');
    await h.flushed();
    await h.say(2, 7, 'second, held by the budget');
    await h.flushed();
    expect(await h.contents()).toEqual(['first']);
    await h.postOk(recall(A, 2, 7));
    await h.postOk(recall(B, 2, 7));
    await h.flushed(60_000);
    await h.flushed(60_000);
    expect(await h.contents()).toEqual(['first']);
  });

  // The budget's buffer is none of the keys a recall looks in (its sender's, the held one): the
  // recall of a message there is "unknown" and goes on as a plain notice, though the message is
  // then taken out at its flush.
  it('tells no plain notice for the recall of a message waiting in its session budget buffer', async () => {
    h = await new Harness().start(once('merge'));
    await h.say(1, 7, 'first');
    await h.flushed();
    await h.say(2, 7, 'second, held by the budget');
    await h.flushed();
    await h.postOk(recall(A, 2, 7));
    await h.postOk(recall(B, 2, 7));
    await h.flushed(60_000);
    await h.flushed(60_000);
    expect(await h.ofType('chat.notice')).toEqual([]);
  });
});
