import { connect } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxLife, OutboxRecord } from '../../src/core/ports/index.js';
import type { TraceEntry } from '../../src/events/trace.js';
import { StreamHub, type OutboxReader } from '../../src/http/event-stream.js';
import { inProcessTrail, Trail } from '../../src/trace/trail.js';
import { until } from '../support/helpers.js';
import { recordingLogger, silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';
import { readEvents, serveStream, type ServedStream } from '../support/sse.js';

/** An outbox in an array: what a store gives the event stream. */
class FakeOutbox implements OutboxReader {
  records: OutboxRecord[] = [];
  private readonly listeners = new Set<(record: OutboxRecord) => void>();
  body = JSON.stringify({ type: 'chat.processedMessage', id: 'x', content: 'hello' });

  add(seq: number): OutboxRecord {
    const record: OutboxRecord = {
      id: `x${seq}`,
      seq,
      type: 'chat.processedMessage',
      sessionKey: 's',
      channel: 'generic',
      createdAt: 0,
      updatedAt: 0,
      attempts: 0,
      state: 'none',
      body: this.body.replace('"x"', `"x${seq}"`),
    };
    this.records.push(record);
    for (const listener of this.listeners) listener(record);
    return record;
  }

  async outboxAfter(seq: number, limit: number): Promise<OutboxRecord[]> {
    return this.records.filter((r) => r.seq > seq).slice(0, limit);
  }

  async lastSeq(): Promise<number> {
    return this.records.at(-1)?.seq ?? 0;
  }

  tail(listener: (record: OutboxRecord) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}

/** An outbox whose seqs have a life, as every store of ours names it. */
class LivedOutbox extends FakeOutbox {
  current: OutboxLife = { tag: 'before', since: 0 };

  async life(): Promise<OutboxLife> {
    return this.current;
  }

  /** What a failover to a replica that lagged leaves: the records after `kept` gone, their seqs assigned again in a new life. */
  rollBack(kept: number): void {
    this.records = this.records.filter((record) => record.seq <= kept);
    this.current = { tag: 'after', since: kept };
  }
}

const serveHub = (hub: StreamHub, outbox: FakeOutbox): Promise<ServedStream> => serveStream(hub.events(outbox));

describe('event stream', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  it('cuts off a client that stops reading, logs it once, and keeps what it missed from trimming', async () => {
    const { logger, lines } = recordingLogger('warn');
    const hub = new StreamHub({ logger, now: () => 0, maxBufferedBytes: 64 * 1024 });
    const outbox = new FakeOutbox();
    outbox.body = JSON.stringify({ type: 'chat.processedMessage', id: 'x', content: 'y'.repeat(10_000) });
    const served = await serveHub(hub, outbox);
    close = served.close;
    // A raw client that asks to resume after 0, then never reads.
    const socket = connect(Number(new URL(served.url).port), '127.0.0.1');
    socket.on('error', () => {});
    outbox.add(1);
    socket.write('GET / HTTP/1.1\r\nHost: x\r\nLast-Event-ID: 1\r\n\r\n');
    socket.pause();
    await until(() => hub.count === 1);
    for (let seq = 2; seq <= 2000 && hub.count > 0; seq++) {
      outbox.add(seq);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(hub.count).toBe(0);
    expect(lines.filter((line) => line.msg.includes('too slow'))).toHaveLength(1);
    // It had not read everything: the trim keeps what it missed, so it can resume.
    const keep = hub.keepAfterSeq();
    expect(keep).toBeGreaterThanOrEqual(1);
    expect(keep).toBeLessThan(outbox.records.length - 1);
    socket.destroy();
  });

  it('replays after Last-Event-ID, then goes live, and says so when records in between were trimmed', async () => {
    const hub = new StreamHub({ logger: silent, now: () => 0 });
    const outbox = new FakeOutbox();
    for (let seq = 1; seq <= 5; seq++) outbox.add(seq);
    outbox.records = outbox.records.filter((r) => r.seq !== 2 && r.seq !== 3); // trimmed
    const served = await serveHub(hub, outbox);
    close = served.close;
    const response = await fetch(served.url, { headers: { 'last-event-id': '1' } });
    const reader = response.body!.getReader();
    let text = '';
    const readUntil = async (needle: string) => {
      while (!text.includes(needle)) text += new TextDecoder().decode((await reader.read()).value);
    };
    await readUntil('id: 5');
    outbox.add(6);
    await readUntil('id: 6');
    await reader.cancel();
    expect(text.indexOf('event: gap')).toBeLessThan(text.indexOf('id: 4'));
    expect(text).toContain('data: {"after":1,"next":4}');
    expect([...text.matchAll(/^id: (\d+)$/gm)].map((m) => m[1])).toEqual(['4', '5', '6']);
  });

  it("keeps an idle stream alive with a comment every 15 s of the hub's clock, and arms nothing once the client left", async () => {
    const clock = new ManualClock();
    const hub = new StreamHub({ logger: silent, now: clock.now, clock });
    const outbox = new FakeOutbox();
    const served = await serveHub(hub, outbox);
    close = served.close;
    const response = await fetch(served.url);
    const reader = response.body!.getReader();
    await clock.armed(15_000);
    await clock.advance(15_000);
    let text = '';
    while (!text.includes(': keep-alive')) text += new TextDecoder().decode((await reader.read()).value);
    expect(text.match(/^: keep-alive$/gm)).toHaveLength(1);
    await reader.cancel();
    await until(() => clock.pending().length === 0);
  });

  it('answers 409 to a resume point ahead of the store instead of an open stream that never delivers', async () => {
    const hub = new StreamHub({ logger: silent, now: () => 0 });
    const outbox = new FakeOutbox();
    outbox.add(1);
    const served = await serveHub(hub, outbox);
    close = served.close;
    const response = await fetch(served.url, { headers: { 'last-event-id': '99' } });
    expect(response.status).toBe(409);
    expect(((await response.json()) as any).error).toMatchObject({ code: 'resume_point_ahead' });
  });

  it('sends a live client a record committed after the newest seq was read, even when it comes before that answer', async () => {
    const hub = new StreamHub({ logger: silent, now: () => 0 });
    const outbox = new FakeOutbox();
    outbox.add(1);
    // A Redis tail can deliver seq 2 before the answer "1" to the newest-seq read comes back.
    outbox.lastSeq = async () => {
      outbox.add(2);
      return 1;
    };
    const served = await serveHub(hub, outbox);
    close = served.close;
    const frames = await readEvents(served.url, 1);
    expect(frames.map((f) => f.id)).toEqual(['2']);
  });

  it('does not hold the outbox trim back for an activity stream cut as too slow', async () => {
    const hub = new StreamHub({ logger: silent, now: () => 0, maxBufferedBytes: 64 * 1024 });
    let last = 0;
    const listeners = new Set<(entry: TraceEntry) => void>();
    const trail = {
      shared: false,
      last: async () => last,
      after: async () => [],
      subscribe: (listener: (entry: TraceEntry) => void) => {
        listeners.add(listener);
        return () => listeners.delete(listener);
      },
    };
    const served = await serveStream(hub.activityStream(trail));
    close = served.close;
    // A raw activity client that never reads.
    const socket = connect(served.port, '127.0.0.1');
    socket.on('error', () => {});
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause();
    await until(() => hub.count === 1);
    // Until the socket's buffers are full and the stream cut (at most 100 MB).
    const preview = 'y'.repeat(10_000);
    for (let n = 1; n <= 10_000 && hub.count > 0; n++) {
      const entry: TraceEntry = { n, at: 0, channel: 'generic', kind: 'verdict', id: `e${n}`, preview };
      last = n;
      for (const listener of listeners) listener(entry);
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(hub.count).toBe(0);
    // Its trail numbers are no outbox seqs: nothing of the outbox is held for it.
    expect(hub.keepAfterSeq()).toBe(Number.MAX_SAFE_INTEGER);
    socket.destroy();
  });

  it('replays a backlog many times maxBufferedBytes to a resuming client that reads it', async () => {
    // The replay waits for the client past maxBufferedBytes: the client must be getting bytes
    // meanwhile (it got none while the replay ran inside the middleware, and the replay waited for ever).
    const hub = new StreamHub({ logger: silent, now: () => 0, maxBufferedBytes: 64 * 1024 });
    const outbox = new FakeOutbox();
    outbox.body = JSON.stringify({ type: 'chat.processedMessage', id: 'x', content: 'y'.repeat(1000) });
    for (let seq = 1; seq <= 1200; seq++) outbox.add(seq);
    const served = await serveHub(hub, outbox);
    close = served.close;
    const frames = await readEvents(`${served.url}?after=0`, 1200, { timeoutMs: 10_000 });
    expect(frames.map((f) => Number(f.id))).toEqual(Array.from({ length: 1200 }, (_, i) => i + 1));
  });

  it('lets go of a resuming client that left while its resume point was being checked', async () => {
    const hub = new StreamHub({ logger: silent, now: () => 0, maxStreams: 1 });
    const outbox = new FakeOutbox();
    outbox.add(1);
    // The first check of the resume point (a Redis round trip) answers only after the client left.
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    const lastSeq = outbox.lastSeq.bind(outbox);
    let checking = false;
    outbox.lastSeq = async () => {
      if (!checking) {
        checking = true;
        await held;
      }
      return lastSeq();
    };
    const served = await serveHub(hub, outbox);
    close = served.close;
    const socketClosed = new Promise<void>((resolve) =>
      served.server.once('connection', (socket) => socket.once('close', () => resolve())),
    );
    const controller = new AbortController();
    const request = fetch(served.url, { headers: { 'last-event-id': '0' }, signal: controller.signal }).catch(
      () => undefined,
    );
    await until(() => checking);
    controller.abort();
    await request;
    await socketClosed;
    answer();
    // The rest of the request runs in microtasks after the answer.
    await new Promise((resolve) => setImmediate(resolve));
    expect(hub.count).toBe(0);
    // Its slot is free again (maxStreams 1).
    expect((await readEvents(`${served.url}?after=0`, 1)).map((f) => f.id)).toEqual(['1']);
  });

  it('refuses streams past maxStreams with 503', async () => {
    const hub = new StreamHub({ logger: silent, now: () => 0, maxStreams: 1 });
    const outbox = new FakeOutbox();
    const served = await serveHub(hub, outbox);
    close = served.close;
    const first = readEvents(served.url, 1, {
      onOpen: async () => {
        const second = await fetch(served.url);
        expect(second.status).toBe(503);
        outbox.add(1);
      },
    });
    expect((await first).map((f) => f.id)).toEqual(['1']);
  });
});

describe('regression: a resume past a seq the store assigned again', () => {
  // A store that lost data (a failover to a replica that lagged) assigns its seqs again: a
  // client that resumed once they had passed its Last-Event-ID got 200 and skipped the records
  // written under the reused seqs.
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  async function rolledBack(): Promise<{ url: string; ids: string[] }> {
    const outbox = new LivedOutbox();
    for (let seq = 1; seq <= 5; seq++) outbox.add(seq);
    const served = await serveHub(new StreamHub({ logger: silent, now: () => 0 }), outbox);
    close = served.close;
    const ids = (await readEvents(`${served.url}?after=0`, 5)).map((f) => f.id);
    outbox.rollBack(2);
    for (let seq = 3; seq <= 8; seq++) outbox.add(seq);
    return { url: served.url, ids };
  }

  it("tells a client whose id is of the earlier life of the reset, then replays the new life's records from where it began", async () => {
    const { url, ids } = await rolledBack();
    expect(ids).toEqual(['1@before', '2@before', '3@before', '4@before', '5@before']);
    const frames = await readEvents(url, 7, { headers: { 'last-event-id': '5@before' } });
    expect(frames[0]).toMatchObject({ event: 'gap', data: { after: 5, next: 3, reset: true } });
    expect(frames.slice(1).map((f) => f.id)).toEqual([
      '3@after',
      '4@after',
      '5@after',
      '6@after',
      '7@after',
      '8@after',
    ]);
  });

  it("replays an earlier life's id ahead of the store from the new life too, where a plain seq ahead gets 409", async () => {
    const { url } = await rolledBack();
    const frames = await readEvents(url, 2, { headers: { 'last-event-id': '50@before' } });
    expect(frames.map((f) => [f.event, f.id])).toEqual([
      ['gap', ''],
      ['chat.processedMessage', '3@after'],
    ]);
    expect(frames[0]?.data).toEqual({ after: 50, next: 3, reset: true });
    const ahead = await fetch(url, { headers: { 'last-event-id': '50' } });
    expect(ahead.status).toBe(409);
    expect(((await ahead.json()) as any).error.message).toMatch(/reconnect with after=8@after/);
  });

  it('resumes a plain seq, and an id of this life, after its seq with no reset (ids sent before lives still work)', async () => {
    const { url } = await rolledBack();
    for (const lastEventId of ['5', '5@after']) {
      const frames = await readEvents(url, 3, { headers: { 'last-event-id': lastEventId } });
      expect(
        frames.map((f) => f.id),
        lastEventId,
      ).toEqual(['6@after', '7@after', '8@after']);
    }
  });

  it("resumes an earlier life's id below where the new life began after that id", async () => {
    const { url } = await rolledBack();
    const frames = await readEvents(url, 8, { headers: { 'last-event-id': '1@before' } });
    expect(frames[0]?.data).toEqual({ after: 1, next: 2, reset: true });
    expect(frames.slice(1).map((f) => f.id)).toEqual([
      '2@after',
      '3@after',
      '4@after',
      '5@after',
      '6@after',
      '7@after',
      '8@after',
    ]);
  });
});

describe('regression: the activity stream after a restart', () => {
  let close: (() => void) | undefined;
  afterEach(() => close?.());

  async function serveTrail(trail: Trail): Promise<string> {
    const served = await serveStream(
      new StreamHub({ logger: silent, now: () => 0 }).activityStream(inProcessTrail(trail)),
    );
    close = served.close;
    return served.url;
  }

  it("tells a client resuming with an id of the earlier process's trail of the reset, then replays this one's entries from the first", async () => {
    const before = new Trail();
    for (const id of ['a', 'b', 'c'])
      before.publish({ at: 0, channel: 'generic', kind: 'verdict', id, verdict: 'accepted' });
    const last = (await readEvents(await serveTrail(before), 3, { headers: { 'last-event-id': '0' } }))[2]!;
    expect(last.id).toBe(`3@${before.life}`);
    close?.();
    // A fresh process: its trail numbers entries from 1 again, past the console's last id before long.
    const trail = new Trail();
    for (const id of ['x1', 'x2', 'x3', 'x4'])
      trail.publish({ at: 0, channel: 'generic', kind: 'verdict', id, verdict: 'accepted' });
    const frames = await readEvents(await serveTrail(trail), 5, { headers: { 'last-event-id': last.id } });
    expect(frames[0]).toMatchObject({ event: 'gap', data: { after: 3, next: 1, reset: true } });
    expect(frames.slice(1).map((frame) => frame.data.id)).toEqual(['x1', 'x2', 'x3', 'x4']);
  });

  it('answers 409 to a resume point ahead of the trail, as /v1/events does, instead of a stream that skips every entry up to it', async () => {
    // A fresh process: its trail numbers entries from 1 again; the console resumes with the old process's last id.
    const trail = new Trail();
    trail.publish({ at: 0, channel: 'generic', kind: 'verdict', id: 'm1', verdict: 'accepted' });
    const response = await fetch(`${await serveTrail(trail)}?after=5000`, { signal: AbortSignal.timeout(1000) });
    await response.body?.cancel();
    expect(response.status).toBe(409);
  });
});
