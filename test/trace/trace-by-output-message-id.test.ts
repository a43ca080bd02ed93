import { readFileSync } from 'node:fs';
import { afterEach, describe, expect, it } from 'vitest';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

describe('the verdict trail by the ids an output names', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it('finds the output a Telegram message went into by the id the output lists in messageIds', async () => {
    const clock = new ManualClock();
    service = await startService({
      debounce: { windowMs: 100, maxMessages: 5, maxWaitMs: 1000 },
      channels: [{ id: 'tg', adapter: 'telegram', secretToken: 'tg-secret', botToken: '4242:AAAA' }],
    }, { clock });
    const update = readFileSync(new URL('../fixtures/telegram/text.json', import.meta.url), 'utf8');
    expect((await postJson(`${service.url}/webhooks/tg`, update, { 'x-telegram-bot-api-secret-token': 'tg-secret' })).status).toBe(200);
    await clock.advance(110);
    const record = await until(async () => (await service.intake.store.outboxAfter(0, 10))[0]);
    const messageId = (JSON.parse(record!.body) as { messageIds: string[] }).messageIds[0]!;
    const trace = (await (await fetch(`${service.url}/v1/trace/${encodeURIComponent(messageId)}`)).json()) as { arrivals: unknown[]; outputs: Array<{ id: string }> };
    expect(trace.arrivals).toHaveLength(1);
    // Today the batch entry is indexed by event.id ("10000"), the output lists platformId ("4242:10000"): no output.
    expect(trace.outputs.map((output) => output.id)).toEqual([record!.id]);
  });
});
