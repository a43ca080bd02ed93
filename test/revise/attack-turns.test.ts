import { afterEach, describe, expect, it } from 'vitest';
import { postJson } from '../support/helpers.js';
import { A, B, Harness, recall } from './attack-support.js';

/*
 * A recall of a message held for its session's agent turn (docs/turns.md, `collect`): taken
 * out of the held batch; when the turn closes nothing of it is emitted, and no notice is told.
 */
describe('a recall of a message held by an agent turn', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.stop();
  });

  it('never emits a held message recalled before its turn closes, and tells no notice of it', async () => {
    h = await new Harness().start({ turns: { mode: 'collect' } });
    await h.say(1, 7, 'first');
    await h.flushed();
    const [first] = await h.ofType('chat.processedMessage');
    expect(first).toBeDefined();
    await h.say(2, 7, 'held while the agent answers');
    await h.flushed();
    expect(await h.contents()).toEqual(['first']);
    await h.postOk(recall(A, 2, 7));
    await h.postOk(recall(B, 2, 7));
    await h.flushed(60);
    const done = await postJson(`${h.service.url}/v1/turns/${first!.id}/done`, { turn: 'done' });
    expect(done.status).toBe(200);
    await h.flushed(2000);
    expect(await h.contents()).toEqual(['first']);
    expect(await h.ofType('chat.notice')).toEqual([]);
    expect(await h.ofType('chat.retracted')).toEqual([]);
  });

  it('emits the rest of a held batch when one of its messages is recalled', async () => {
    h = await new Harness().start({ turns: { mode: 'collect' } });
    await h.say(1, 7, 'first');
    await h.flushed();
    const [first] = await h.ofType('chat.processedMessage');
    await h.say(2, 7, 'kept');
    await h.flushed();
    await h.say(3, 7, 'recalled');
    await h.flushed();
    await h.postOk(recall(A, 3, 7));
    await h.flushed(60);
    await postJson(`${h.service.url}/v1/turns/${first!.id}/done`, { turn: 'done' });
    await h.flushed(2000);
    expect(await h.contents()).toEqual(['first', 'kept']);
  });
});
