import { afterEach, describe, expect, it } from 'vitest';
import { outputOf, type ProcessedMessage } from '../../src/events/output.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

/* Budgets on the real service (SQLite), time on a manual clock. */
describe('a budget of 2 per minute per sender', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  async function start(action: 'merge' | 'drop', clock: ManualClock) {
    service = await startService(
      {
        debounce: { windowMs: 100, maxWaitMs: 300 },
        budgets: [{ per: 'sender', limit: 2, windowMs: 60_000, action }],
      },
      { clock },
    );
  }
  const say = (id: string, content: string, sender = 'u1') =>
    postJson(`${service.url}/webhooks/generic`, { id, sessionKey: 'cli:a', sender: { id: sender }, content });
  const outputs = async () =>
    (await service.intake.store.outboxAfter(0, 100)).map((record) => outputOf(record) as ProcessedMessage);
  /** Say it, then let its batch close. */
  async function turn(clock: ManualClock, id: string, content: string, sender?: string) {
    expect((await say(id, content, sender)).status).toBe(200);
    await clock.advance(150);
    await service.intake.settle();
  }

  it('with merge: two outputs, then one merged output of the rest when the window opens, nothing lost', async () => {
    const clock = new ManualClock();
    await start('merge', clock);
    await turn(clock, 'm1', 'one');
    await turn(clock, 'm2', 'two');
    await turn(clock, 'm3', 'three');
    await turn(clock, 'm4', 'four');
    await turn(clock, 'm5', 'five');
    expect((await outputs()).map((output) => output.content)).toEqual(['one', 'two']);
    // Another sender of the conversation is not held up behind the deferred batches.
    await turn(clock, 'o1', 'other', 'u2');
    expect((await outputs()).map((output) => output.content)).toEqual(['one', 'two', 'other']);
    const trace = (await (await fetch(`${service.url}/v1/trace/m3`)).json()) as {
      arrivals: Array<{ verdict: string; reason?: string }>;
    };
    expect(trace.arrivals.map((arrival) => arrival.verdict)).toContain('over_budget');

    await clock.advance(60_000);
    await until(async () => (await outputs()).length === 4, 10_000);
    const merged = (await outputs())[3]!;
    expect(merged).toMatchObject({ merged: 3, messageIds: ['m3', 'm4', 'm5'] });
    expect(merged.content).toContain('three');
    expect(merged.content).toContain('five');
    expect(service.intake.metrics.channelStats().generic).toMatchObject({ over_budget: 3 });
  });

  it('with drop: two outputs, the rest kept as the context of the next allowed one', async () => {
    const clock = new ManualClock();
    await start('drop', clock);
    await turn(clock, 'm1', 'one');
    await turn(clock, 'm2', 'two');
    await turn(clock, 'm3', 'three');
    await clock.advance(60_000);
    await turn(clock, 'm4', 'four');
    const out = await outputs();
    expect(out.map((output) => output.content)).toEqual(['one', 'two', 'four']);
    expect(out[2]!.context.map((message) => message.content)).toEqual(['three']);
  });
});
