import { describe, expect, it } from 'vitest';
import { events, type StreamEvent } from '../../src/client.js';
import { postJson, startService, until, useTeardown, type Running } from '../support/helpers.js';
import { ManualClock } from '../support/manual-clock.js';
import { serve } from '../support/servers.js';

const TOKEN = 'operator-token';
const { services } = useTeardown();

/** The real service, each message its own output at once (a buffer of one flushes when it fills). */
async function start(file: Record<string, unknown> = {}): Promise<Running> {
  const service = await startService({
    server: { apiToken: TOKEN },
    debounce: { windowMs: 20, maxMessages: 1 },
    ...file,
  });
  services.push(service);
  return service;
}

async function emit(service: Running, ids: string[]): Promise<void> {
  const before = await service.intake.store.lastSeq();
  for (const id of ids)
    expect(
      (await postJson(`${service.url}/webhooks/generic`, { id, sessionKey: `cli:${id}`, content: id })).status,
    ).toBe(200);
  await until(async () => (await service.intake.store.lastSeq()) === before + ids.length);
}

async function take(stream: AsyncGenerator<StreamEvent>, count: number): Promise<StreamEvent[]> {
  const taken: StreamEvent[] = [];
  while (taken.length < count) {
    const step = await stream.next();
    if (step.done) break;
    taken.push(step.value);
  }
  return taken;
}

const contentOf = (event: StreamEvent | undefined) =>
  event?.type === 'chat.processedMessage' ? event.data.content : event?.type;

describe('events()', () => {
  it('resumes with Last-Event-ID after the service drops the connection, with nothing missed or repeated', async () => {
    const service = await start();
    const clock = new ManualClock();
    const stream = events({ url: service.url, token: TOKEN, lastEventId: '0', clock, random: () => 0 });
    await emit(service, ['a1', 'a2']);
    const before = await take(stream, 2);
    expect(before.map(contentOf)).toEqual(['a1', 'a2']);
    expect(stream.lastEventId).toBe((before[1] as { id: string }).id);
    expect(stream.lastEventId).toMatch(/^2@[\w-]+$/);

    service.server.closeAllConnections();
    const after = take(stream, 2);
    await clock.armed(250); // the first backoff wait, without jitter: half of 500 ms
    await emit(service, ['a3', 'a4']);
    await clock.advance(250);
    expect((await after).map(contentOf)).toEqual(['a3', 'a4']);
    expect(stream.lastEventId).toMatch(/^4@/);
    await stream.return();
  });

  it('surfaces the gap of a resume from an earlier life of the store, then the records of the new one', async () => {
    const first = await start({ store: 'memory' });
    await emit(first, ['a1', 'a2', 'a3']);
    const earlier = events({ url: first.url, token: TOKEN, lastEventId: '0' });
    await take(earlier, 3);
    const lastEventId = earlier.lastEventId;
    await earlier.return();
    // The memory store starts its seqs over in a new life.
    const second = await start({ store: 'memory' });
    await emit(second, ['b1', 'b2']);
    const stream = events({ url: second.url, token: TOKEN, ...(lastEventId ? { lastEventId } : {}) });
    const [gap, ...records] = await take(stream, 3);
    expect(gap).toEqual({ type: 'gap', after: 3, next: 1, reset: true });
    expect(records.map(contentOf)).toEqual(['b1', 'b2']);
    expect(records.map((record) => (record.type === 'gap' ? 0 : record.data.seq))).toEqual([1, 2]);
    await stream.return();
  });

  it('opens the stream again with its Last-Event-ID when it stays silent past idleMs (a connection that hung)', async () => {
    const resumedFrom: Array<string | undefined> = [];
    const notice = (seq: number) =>
      `id: ${seq}@L\nevent: chat.notice\ndata: ${JSON.stringify({ type: 'chat.notice', id: `n${seq}`, seq, sessionKey: 's' })}\n\n`;
    const hung = await serve((req, res) => {
      resumedFrom.push(req.headers['last-event-id'] as string | undefined);
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      // The first connection sends one event and then nothing, as a link that hung would.
      res.write(resumedFrom.length === 1 ? notice(1) : notice(2));
    });
    const clock = new ManualClock();
    const stream = events({ url: `http://127.0.0.1:${hung.port}`, clock, random: () => 0, idleMs: 1000 });
    expect((await stream.next()).value).toMatchObject({ id: '1@L', type: 'chat.notice' });
    const second = stream.next();
    await clock.advance(1000);
    await clock.armed(250);
    await clock.advance(250);
    expect((await second).value).toMatchObject({ id: '2@L', data: { seq: 2 } });
    expect(resumedFrom).toEqual([undefined, '1@L']);
    await stream.return();
    await hung.close();
  });

  it("throws the service's 401 with its code rather than reconnecting", async () => {
    const service = await start();
    const stream = events({ url: service.url, token: 'wrong' });
    await expect(stream.next()).rejects.toMatchObject({ name: 'ClientError', status: 401, code: 'bad_token' });
  });

  it('ends without an error when its signal is aborted while it waits for an event', async () => {
    const service = await start();
    const stop = new AbortController();
    const stream = events({ url: service.url, token: TOKEN, signal: stop.signal });
    const step = stream.next();
    const open = async () =>
      (
        (await (
          await fetch(`${service.url}/v1/stats`, { headers: { authorization: `Bearer ${TOKEN}` } })
        ).json()) as any
      ).streams;
    await until(async () => (await open()) === 1, 5000, open);
    stop.abort();
    expect(await step).toEqual({ done: true, value: undefined });
  });
});
