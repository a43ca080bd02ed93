import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

interface Trace {
  arrivals: Array<{ verdict: string; reason?: string }>;
  outputs: Array<{ id: string; messageIds: string[] }>;
}

describe('the trace of a message kept as context', () => {
  let service: Running;
  afterEach(() => service?.stop());

  it('says why it was kept, and once an output carried it, names that output', async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100 },
        activation: { group: 'mention', wakeWords: ['bot'] },
        channels: [{ id: 'generic', adapter: 'generic' }],
      },
      { clock },
    );
    const trace = async (id: string) => (await (await fetch(`${service.url}/v1/trace/${id}`)).json()) as Trace;
    const say = async (id: string, content: string) => {
      const conversation = { type: 'group', id: 'room' };
      await postJson(`${service.url}/webhooks/generic`, { id, sessionKey: 'cli:room', content, conversation });
      await clock.advance(150);
    };
    await say('m1', 'chatter');
    await until(async () => (await trace('m1')).arrivals.some((arrival) => arrival.verdict === 'context'));
    expect((await trace('m1')).arrivals.find((arrival) => arrival.verdict === 'context')?.reason).toBe(
      'not addressed: group activation is mention',
    );
    expect((await trace('m1')).outputs).toEqual([]);
    await say('m2', 'bot, sum it up');
    await until(async () => (await trace('m2')).outputs.length > 0);
    const carrier = (await trace('m2')).outputs[0]!;
    expect(carrier.messageIds).toEqual(['m2']);
    const kept = await trace('m1');
    expect(kept.outputs.map((output) => output.id)).toEqual([carrier.id]);
  });
});
