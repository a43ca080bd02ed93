import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage } from '../../src/events/output.js';
import { fixture } from '../fixtures/index.js';
import { postJson, startService, until, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';

const SECRET = 'tg_secret-1';

describe('forwarded parts in the output', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  it('a Telegram forward and the comment its sender adds right after it are one output; the forward part names the original author and time', async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        debounce: { windowMs: 500, maxWaitMs: 2000 },
        channels: [
          { id: 'tg', adapter: 'telegram', secretToken: SECRET, botToken: '1:x', apiBaseUrl: 'http://127.0.0.1:9' },
        ],
      },
      { clock },
    );
    const got: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => got.push(message));
    const send = (update: unknown) =>
      postJson(`${service.url}/webhooks/tg`, update, { 'x-telegram-bot-api-secret-token': SECRET });
    const forward = fixture('telegram', 'forwarded.json');
    const comment = fixture('telegram', 'text.json');
    comment.update_id = forward.update_id + 1;
    comment.message.text = 'is this right?';
    expect((await send(forward)).status).toBe(200);
    expect((await send(comment)).status).toBe(200);
    await clock.advance(600);
    await until(() => got.length === 1);
    const [output] = got;
    expect(output!.content).toBe('the meeting moved to 3pm is this right?');
    expect(output!.parts[0]!.forwarded).toEqual([
      {
        sender: { id: '222', name: 'Bo Li' },
        content: 'the meeting moved to 3pm',
        timestamp: 1_717_990_000,
        media: [],
      },
    ]);
    expect(output!.parts[1]!.forwarded).toBeUndefined();
  });

  it('a WhatsApp forward, whose author the platform never names, is one message of an unnamed sender at its own time', async () => {
    service = await startService({
      debounce: { windowMs: 100, maxWaitMs: 400 },
      channels: [{ id: 'wa', adapter: 'whatsapp', verify: false, verifyToken: 'hub', accessToken: 'wa' }],
    });
    const got: ProcessedMessage[] = [];
    service.intake.on('chat.processedMessage', (message) => got.push(message));
    const body = fixture('whatsapp', 'forwarded.json');
    body.entry[0].changes[0].value.messages.pop();
    expect((await postJson(`${service.url}/webhooks/wa`, body)).status).toBe(200);
    await until(() => got.length === 1);
    expect(got[0]!.parts[0]!.forwarded).toEqual([
      { sender: { id: '' }, content: '转发的通知', timestamp: 1_749_416_390, media: [] },
    ]);
  });
});
