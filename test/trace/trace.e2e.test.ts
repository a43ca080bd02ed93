import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { standardWebhooks } from '../../src/core/signing.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { readEvents } from '../support/sse.js';
import { ManualClock } from '../support/manual-clock.js';

const SECRET = 'whsec_' + Buffer.from('generic-channel-secret-0123456789').toString('base64');

describe('the verdict trail', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  const post = (body: unknown, path = '/webhooks/generic', headers: Record<string, string> = {}) =>
    postJson(`${service.url}${path}`, body, headers);

  it('answers what happened to a message: its verdicts, the output it went into, and its delivery', async () => {
    const clock = new ManualClock();
    service = await startService({ debounce: { windowMs: 100, maxMessages: 5, maxWaitMs: 1000 } }, { clock });
    await post({ id: 'm1', sessionKey: 'cli:t', content: 'one' });
    await post({ id: 'm1', sessionKey: 'cli:t', content: 'one' });
    await post({ id: 'm2', sessionKey: 'cli:t', content: 'two' });
    await clock.advance(110);
    await until(async () => (await service.intake.store.outboxAfter(0, 10)).length === 1);
    const trace = (await (await fetch(`${service.url}/v1/trace/m1`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.verdict])).toEqual([
      ['m1', 'accepted'],
      ['m1', 'duplicate'],
      ['m2', 'accepted'],
    ]);
    expect(trace.arrivals[1].reason).toMatch(/already taken/);
    expect(trace.outputs).toHaveLength(1);
    expect(trace.outputs[0]).toMatchObject({
      messageIds: ['m1', 'm2'],
      delivery: { state: 'none', attempts: 0 },
      retained: true,
    });
    // The output id resolves to the same trail.
    const byOutput = (await (await fetch(`${service.url}/v1/trace/${trace.outputs[0].id}`)).json()) as any;
    expect(byOutput.outputs[0].id).toBe(trace.outputs[0].id);
    expect(byOutput.arrivals.map((a: any) => a.id)).toContain('m2');
    expect((await fetch(`${service.url}/v1/trace/never-seen`)).status).toBe(404);
  });

  it('names the message a fuzzy duplicate repeats and the output that message went into, not an earlier one of the same words', async () => {
    const clock = new ManualClock();
    service = await startService(
      { debounce: { windowMs: 100, maxMessages: 5, maxWaitMs: 1000 }, dedup: { fuzzyWindowMs: 2000 } },
      { clock },
    );
    const send = async () =>
      (await post({ sessionKey: 'cli:f', sender: { id: 'u' }, content: 'ok' })).body.events[0] as {
        id: string;
        verdict: string;
      };
    const outputs = async () => service.intake.store.outboxAfter(0, 10);
    const earlier = await send();
    await clock.advance(110);
    await until(async () => (await outputs()).length === 1);
    // Past the fuzzy window: the same words are a new message, and the double send repeats that one.
    await clock.advance(3000);
    const repeated = await send();
    await clock.advance(500);
    const double = await send();
    expect([earlier.verdict, repeated.verdict, double.verdict]).toEqual(['accepted', 'accepted', 'fuzzy_duplicate']);
    await clock.advance(110);
    await until(async () => (await outputs()).length === 2);
    const output = (await outputs())[1]!;
    const trace = (await (await fetch(`${service.url}/v1/trace/${double.id}`)).json()) as any;
    expect(trace.arrivals.map((a: any) => [a.id, a.verdict])).toEqual([
      [repeated.id, 'accepted'],
      [double.id, 'fuzzy_duplicate'],
    ]);
    expect(trace.arrivals[1]).toMatchObject({
      messageIds: [repeated.id],
      reason: expect.stringMatching(/same content/),
    });
    expect(trace.outputs.map((o: any) => [o.id, o.messageIds])).toEqual([[output.id, [repeated.id]]]);
  });

  it('streams verdicts as deliveries arrive, resumable by sequence', async () => {
    service = await startService({
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: 'signed', adapter: 'generic', secret: SECRET },
      ],
    });
    const frames = readEvents(`${service.url}/v1/activity`, 3, {
      onOpen: async () => {
        await post({ id: 'a1', sessionKey: 'cli:x', content: 'hi' });
        await post({ id: 'a1', sessionKey: 'cli:x', content: 'hi' });
        await post({ sessionKey: 'cli:x', content: 'unsigned' }, '/webhooks/signed');
      },
    });
    const got = await frames;
    expect(got.map((f) => [f.event, f.data.verdict])).toEqual([
      ['activity', 'accepted'],
      ['activity', 'duplicate'],
      ['activity', 'rejected'],
    ]);
    expect(got[2]!.data.reason).toMatch(/^bad_signature/);
    const resumed = await readEvents(`${service.url}/v1/activity?after=${got[0]!.id}`, 2);
    expect(resumed.map((f) => f.data.verdict)).toEqual(['duplicate', 'rejected']);
  });

  it('takes a replayed signed delivery without ids for a duplicate (the webhook-id is a claim)', async () => {
    const clock = new ManualClock();
    service = await startService({ channels: [{ id: 'signed', adapter: 'generic', secret: SECRET }] }, { clock });
    const body = JSON.stringify({ sessionKey: 'cli:r', content: 'pay the invoice' });
    const timestamp = Math.floor(clock.now() / 1000);
    const headers = {
      'webhook-id': 'msg_replayed',
      'webhook-timestamp': String(timestamp),
      'webhook-signature': standardWebhooks.sign(SECRET, 'msg_replayed', timestamp, body),
    };
    const first = await post(body, '/webhooks/signed', headers);
    expect(first.body.accepted).toBe(1);
    for (let i = 0; i < 2; i++) {
      // Past the fuzzy window (2 s), inside the signature tolerance (5 min).
      await clock.advance(60_000);
      const again = await post(body, '/webhooks/signed', headers);
      expect(again.body).toMatchObject({ accepted: 0, duplicates: 1 });
    }
  });
});

describe('regression: the verdict trail by the ids an output names', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it('finds the output a Telegram message went into by the id the output lists in messageIds', async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 100, maxMessages: 5, maxWaitMs: 1000 },
        channels: [{ id: 'tg', adapter: 'telegram', secretToken: 'tg-secret', botToken: '4242:AAAA' }],
      },
      { clock },
    );
    const update = readFileSync(new URL('../fixtures/telegram/text.json', import.meta.url), 'utf8');
    expect(
      (await postJson(`${service.url}/webhooks/tg`, update, { 'x-telegram-bot-api-secret-token': 'tg-secret' })).status,
    ).toBe(200);
    await clock.advance(110);
    const record = await until(async () => (await service.intake.store.outboxAfter(0, 10))[0]);
    const messageId = (JSON.parse(record!.body) as { messageIds: string[] }).messageIds[0]!;
    const trace = (await (await fetch(`${service.url}/v1/trace/${encodeURIComponent(messageId)}`)).json()) as {
      arrivals: unknown[];
      outputs: Array<{ id: string }>;
    };
    expect(trace.arrivals).toHaveLength(1);
    // The batch entry was once indexed by event.id ("10000") while the output lists platformId ("4242:10000"): no output was found.
    expect(trace.outputs.map((output) => output.id)).toEqual([record!.id]);
  });
});
