import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { fixtureBytes } from '../fixtures/index.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

const sign = (secret: string, body: Buffer) => `sha1=${createHmac('sha1', secret).update(body).digest('hex')}`;

describe('the trace of a correlated copy', () => {
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  for (const [store, late] of [
    ['memory', false],
    ['sqlite', false],
    ['memory', true],
  ] as const) {
    it(`links the copy to the output the first delivery went into (${store} store${late ? ', the copy after the flush' : ''})`, async () => {
      // Time moves only when the test says so: the copy lands inside the window, or after the flush, as named.
      const clock = new ManualClock();
      service = await startService(
        {
          ...(store === 'memory' ? { store: 'memory' } : {}),
          debounce: { windowMs: 100, maxWaitMs: 1000 },
          media: { timeoutMs: 2000, retries: 0 },
          channels: [
            { id: 'qq-a', adapter: 'onebot', secret: 'secret-a', namespace: 'qq' },
            { id: 'qq-b', adapter: 'onebot', secret: 'secret-b', namespace: 'qq' },
          ],
        },
        { clock },
      );
      const napcat = fixtureBytes('onebot', 'napcat-group.json');
      const gocqhttp = fixtureBytes('onebot', 'gocqhttp-group.json');
      expect(
        (await postJson(`${service.url}/webhooks/qq-a`, napcat.toString(), { 'x-signature': sign('secret-a', napcat) }))
          .status,
      ).toBe(204);
      const first = service;
      if (late) {
        await clock.advance(100);
        await until(async () => (await first.intake.store.outboxAfter(0, 10)).length === 1, 10_000);
      }
      expect(
        (
          await postJson(`${service.url}/webhooks/qq-b`, gocqhttp.toString(), {
            'x-signature': sign('secret-b', gocqhttp),
          })
        ).status,
      ).toBe(204);
      const running = service;
      if (!late) {
        expect(await running.intake.store.outboxAfter(0, 10)).toEqual([]); // the copy came inside the window
        await clock.advance(100);
      }
      await until(async () => (await running.intake.store.outboxAfter(0, 10)).length === 1, 10_000);
      const [output] = await running.intake.store.outboxAfter(0, 10);
      const trace = (await (await fetch(`${running.url}/v1/trace/884213`)).json()) as any;
      expect(trace.arrivals.map((arrival: any) => [arrival.channel, arrival.bot, arrival.verdict])).toEqual([
        ['qq-a', '10001000', 'accepted'],
        ['qq-b', '20002000', 'correlated'],
      ]);
      expect(trace.outputs.map((joined: any) => joined.id)).toEqual([output!.id]);
    });
  }
});
