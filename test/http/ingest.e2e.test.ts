import { readdirSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { standardWebhooks } from '../../src/core/signing.js';
import { postJson, startService, tempDir, until, type Running } from '../support/helpers.js';
import { readEvents } from '../support/sse.js';
import { ManualClock } from '../support/manual-clock.js';

const quick = { debounce: { windowMs: 150, maxMessages: 3, maxWaitMs: 600 }, dedup: { fuzzyWindowMs: 400 } };

describe('generic webhook to event stream, on the real server with sqlite', () => {
  let service: Running;
  afterEach(async () => service?.stop());

  const post = (body: unknown, path = '/webhooks/generic', headers: Record<string, string> = {}) =>
    postJson(`${service.url}${path}`, body, headers);

  it('merges three fragments into one message on the event stream', async () => {
    const clock = new ManualClock();
    service = await startService({ ...quick, debounce: { ...quick.debounce, maxMessages: 5 } }, { clock });
    const frames = readEvents(`${service.url}/v1/events`, 1, {
      onOpen: async () => {
        for (const content of ['帮我查一下', '订单 ORD-123', '的状态']) {
          expect(
            (await post({ id: `m-${content}`, sessionKey: 'cli:alice', content, timestamp: 1710234567 })).status,
          ).toBe(200);
          await clock.advance(100); // typing pauses shorter than the 150 ms window
        }
        await clock.advance(150);
      },
    });
    const [frame] = await frames;
    expect(frame?.event).toBe('chat.processedMessage');
    expect(frame?.data).toMatchObject({
      type: 'chat.processedMessage',
      seq: 1,
      sessionKey: 'cli:alice',
      content: '帮我查一下订单 ORD-123 的状态',
      merged: 3,
      messageIds: ['m-帮我查一下', 'm-订单 ORD-123', 'm-的状态'],
      channel: 'generic',
      sourceChannel: 'generic',
      timestamp: 1710234567,
    });
    // The seq, and the life of the store's seqs it was read in (docs/output.md#consuming-it).
    expect(frame?.id).toMatch(/^1@[\w-]{8}$/);
  });

  it('answers JSON with its type and its length in bytes, not characters', async () => {
    service = await startService(quick);
    const answer = await post({ id: '消息-1', sessionKey: 'cli:dan', content: 'hi' });
    expect(answer.status).toBe(200);
    expect(answer.headers.get('content-type')).toBe('application/json; charset=utf-8');
    const text = JSON.stringify({ accepted: 1, duplicates: 0, events: [{ id: '消息-1', verdict: 'accepted' }] });
    expect(answer.body).toEqual(JSON.parse(text));
    expect(answer.headers.get('content-length')).toBe(String(Buffer.byteLength(text)));
  });

  it('answers a platform retry 200 as a duplicate and emits the message once', async () => {
    service = await startService(quick);
    const first = await post({ id: 'msg_1', sessionKey: 'cli:bob', content: 'hi' });
    expect(first.body).toEqual({ accepted: 1, duplicates: 0, events: [{ id: 'msg_1', verdict: 'accepted' }] });
    const retry = await post({ id: 'msg_1', sessionKey: 'cli:bob', content: 'hi' });
    expect(retry.status).toBe(200);
    expect(retry.body).toEqual({ accepted: 0, duplicates: 1, events: [{ id: 'msg_1', verdict: 'duplicate' }] });
    const frames = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frames).toHaveLength(1);
    expect(frames[0]?.data.merged).toBe(1);
    // Nothing after it: the retry did not come out on its own.
    expect(await readEvents(`${service.url}/v1/events?after=${frames[0]?.id}`, 1, { timeoutMs: 500 })).toEqual([]);
  });

  it('drops a double send without ids inside the fuzzy window and admits it after', async () => {
    const clock = new ManualClock();
    service = await startService({ ...quick, debounce: { windowMs: 50, maxMessages: 1 } }, { clock });
    expect((await post({ sessionKey: 'cli:carol', content: 'restart  the service' })).body.accepted).toBe(1);
    const twin = await post({ sessionKey: 'cli:carol', content: 'restart the service' });
    expect(twin.body).toMatchObject({ accepted: 0, duplicates: 1, events: [{ verdict: 'fuzzy_duplicate' }] });
    // A message with its own id is never a fuzzy duplicate under the default `no-id` policy.
    expect((await post({ id: 'x1', sessionKey: 'cli:carol', content: 'restart the service' })).body.accepted).toBe(1);
    await clock.advance(399);
    expect((await post({ sessionKey: 'cli:carol', content: 'restart the service' })).body.accepted).toBe(0);
    await clock.advance(1);
    expect((await post({ sessionKey: 'cli:carol', content: 'restart the service' })).body.accepted).toBe(1);
  });

  it('holds several events of one delivery and reports each verdict', async () => {
    service = await startService(quick);
    const result = await post([
      { id: 'a', sessionKey: 'cli:d', content: 'one' },
      { id: 'a', sessionKey: 'cli:d', content: 'one' },
      { id: 'b', sessionKey: 'cli:d', content: 'two' },
    ]);
    expect(result.body).toEqual({
      accepted: 2,
      duplicates: 1,
      events: [
        { id: 'a', verdict: 'accepted' },
        { id: 'a', verdict: 'duplicate' },
        { id: 'b', verdict: 'accepted' },
      ],
    });
  });

  it('flushes at maxMessages, at maxWaitMs, and on a command', async () => {
    let clock = new ManualClock();
    service = await startService({ debounce: { windowMs: 300, maxMessages: 2, maxWaitMs: 500 } }, { clock });
    const seen: Array<{ content: string; merged: number }> = [];
    service.intake.on('chat.processedMessage', (m) => {
      seen.push({ content: m.content, merged: m.merged });
    });
    await post([
      { sessionKey: 'cli:e', content: 'a' },
      { sessionKey: 'cli:e', content: 'b' },
      { sessionKey: 'cli:e', content: 'c' },
    ]);
    // The count closes the buffer at once: well inside the 300 ms window.
    await clock.advance(10);
    await until(() => seen.length === 1);
    expect(seen[0]).toMatchObject({ content: 'a b', merged: 2 });

    await post({ sessionKey: 'cli:f', content: 'hello' });
    await post({ sessionKey: 'cli:f', content: '/reset' });
    await clock.advance(10);
    await until(() => seen.length === 2);
    expect(seen[1]).toMatchObject({ content: 'hello /reset', merged: 2 });
    // The third fragment of the first delivery started a batch of its own.
    await clock.advance(300);
    await until(() => seen.length === 3);
    expect(seen[2]).toMatchObject({ content: 'c', merged: 1 });

    // maxWait: with maxMessages 2 a chatty user hits the count first, so use a wide count here.
    await service.stop();
    clock = new ManualClock();
    service = await startService({ debounce: { windowMs: 200, maxMessages: 50, maxWaitMs: 500 } }, { clock });
    const merged: number[] = [];
    service.intake.on('chat.processedMessage', (m) => {
      merged.push(m.merged);
    });
    for (let i = 0; i < 8; i++) {
      await post({ sessionKey: 'cli:g', content: `x${i}` });
      await clock.advance(100);
    }
    await until(() => merged.length >= 1);
    // Parts at 0, 100, ... 400 ms: the window (200 ms) never closes, maxWait does at 500 ms.
    expect(merged[0]).toBe(5);
  });

  it('flushes at once on a flush word (trimmed, in any case) as on a command, not on a message that only contains one, and not on a channel that sets none', async () => {
    const clock = new ManualClock();
    service = await startService(
      {
        ...quick,
        debounce: { ...quick.debounce, flushWords: ['stop', '停', '等等'] },
        channels: [
          { id: 'generic', adapter: 'generic' },
          { id: 'quiet', adapter: 'generic', debounce: { flushWords: [] } },
        ],
      },
      { clock },
    );
    const seen: Array<{ sessionKey: string; content: string; merged: number }> = [];
    service.intake.on('chat.processedMessage', (m) => {
      seen.push({ sessionKey: m.sessionKey, content: m.content, merged: m.merged });
    });
    await post({ sessionKey: 'cli:h', content: '帮我查一下' });
    await post({ sessionKey: 'cli:h', content: '  STOP ' });
    await post({ sessionKey: 'cli:w', content: '等等' });
    await post({ sessionKey: 'cli:n', content: 'stop it' });
    await post({ sessionKey: 'quiet:q', content: 'stop' }, '/webhooks/quiet');
    // Well inside the 150 ms window: only the flush words' buffers closed.
    await clock.advance(10);
    await until(() => seen.length === 2);
    expect(seen.sort((a, b) => a.sessionKey.localeCompare(b.sessionKey))).toEqual([
      { sessionKey: 'cli:h', content: '帮我查一下 STOP', merged: 2 },
      { sessionKey: 'cli:w', content: '等等', merged: 1 },
    ]);
    await clock.advance(150);
    await until(() => seen.length === 4);
    expect(
      seen
        .slice(2)
        .map((m) => m.content)
        .sort(),
    ).toEqual(['stop', 'stop it']);
  });

  it('keeps two people of one group apart', async () => {
    service = await startService(quick);
    const got: Array<{ sender: string; content: string }> = [];
    service.intake.on('chat.processedMessage', (m) => {
      got.push({ sender: m.sender.id, content: m.content });
    });
    const group = { type: 'group', id: 'g1' };
    await post({ sessionKey: 'cli:group:g1', conversation: group, sender: { id: 'alice' }, content: 'I think' });
    await post({ sessionKey: 'cli:group:g1', conversation: group, sender: { id: 'bob' }, content: 'no way' });
    await post({ sessionKey: 'cli:group:g1', conversation: group, sender: { id: 'alice' }, content: 'we should' });
    await until(() => got.length === 2);
    expect(got).toEqual(
      expect.arrayContaining([
        { sender: 'alice', content: 'I think we should' },
        { sender: 'bob', content: 'no way' },
      ]),
    );
  });

  it('refuses every bad input with the JSON error shape and records nothing', async () => {
    service = await startService({
      ...quick,
      server: { bodyLimitBytes: 2048, maxDepth: 20 },
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: 'signed', adapter: 'generic', secret: 'whsec_' + Buffer.from('s3cret-key-bytes').toString('base64') },
      ],
    });
    const cases: Array<[string, Promise<{ status: number; body: any }>, number, string]> = [
      ['malformed JSON', post('{"sessionKey": '), 400, 'bad_json'],
      ['wrong shape', post({ content: 'no session' }), 400, 'bad_shape'],
      ['no content', post({ sessionKey: 'cli:x' }), 400, 'bad_shape'],
      ['too deep', post('['.repeat(50) + ']'.repeat(50)), 400, 'too_deep'],
      ['__proto__ key', post('{"sessionKey":"cli:x","content":"a","__proto__":{"x":1}}'), 400, 'forbidden_key'],
      [
        'constructor key',
        post('{"sessionKey":"cli:x","content":"a","sender":{"id":"1","constructor":1}}'),
        400,
        'forbidden_key',
      ],
      ['unknown channel', post({ sessionKey: 'cli:x', content: 'a' }, '/webhooks/nope'), 404, 'unknown_channel'],
      [
        'channel id that is not valid percent-encoding',
        post({ sessionKey: 'cli:x', content: 'a' }, '/webhooks/%E0%A4%A'),
        404,
        'unknown_channel',
      ],
      ['over the body limit', post({ sessionKey: 'cli:x', content: 'a'.repeat(3000) }), 413, 'body_too_large'],
      ['missing signature', post({ sessionKey: 'cli:x', content: 'a' }, '/webhooks/signed'), 401, 'bad_signature'],
      [
        'short signature',
        post({ sessionKey: 'cli:x', content: 'a' }, '/webhooks/signed', {
          'webhook-id': 'm',
          'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
          'webhook-signature': 'v1,AA==',
        }),
        401,
        'bad_signature',
      ],
    ];
    for (const [name, pending, status, code] of cases) {
      const response = await pending;
      expect({ name, status: response.status, code: response.body?.error?.code }).toEqual({ name, status, code });
      expect(typeof response.body.error.message).toBe('string');
    }
    // The 404 does not tell an unauthenticated caller which channels exist.
    expect((await post({ sessionKey: 'cli:x', content: 'a' }, '/webhooks/nope')).body.error.message).not.toMatch(
      /generic|signed/,
    );
    const wrongType = await fetch(`${service.url}/webhooks/generic`, {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: 'hi',
    });
    expect(wrongType.status).toBe(415);
    expect(((await wrongType.json()) as any).error.code).toBe('unsupported_media_type');

    await service.intake.settle();
    expect(await service.intake.store.outboxAfter(0, 10)).toHaveLength(0);
    expect(await service.intake.store.openBuffers()).toBe(0);
    expect(service.intake.metrics.channelStats().signed?.rejected).toBe(2);
  });

  it('counts a chunked body against the limit while it streams: 413 past it, whole when under it', async () => {
    service = await startService({ ...quick, server: { bodyLimitBytes: 2048 } });
    // No Content-Length: the limit can only be enforced while the chunks arrive.
    const chunked = (pieces: string[]) =>
      new Promise<{ status: number; body: any }>((resolve, reject) => {
        const req = request(
          `${service!.url}/webhooks/generic`,
          { method: 'POST', headers: { 'content-type': 'application/json', 'transfer-encoding': 'chunked' } },
          (res) => {
            let text = '';
            res
              .setEncoding('utf8')
              .on('data', (chunk) => (text += chunk))
              .on('end', () => resolve({ status: res.statusCode ?? 0, body: JSON.parse(text) }));
          },
        );
        req.on('error', reject);
        for (const piece of pieces) req.write(piece);
        req.end();
      });
    const big = JSON.stringify({ sessionKey: 'cli:big', content: 'b'.repeat(4000) });
    const tooBig = await chunked([big.slice(0, 1000), big.slice(1000, 2000), big.slice(2000)]);
    expect(tooBig).toMatchObject({ status: 413, body: { error: { code: 'body_too_large' } } });
    const small = JSON.stringify({ id: 'chunked-1', sessionKey: 'cli:small', content: 'in three pieces' });
    const fine = await chunked([small.slice(0, 10), small.slice(10, 30), small.slice(30)]);
    expect(fine).toMatchObject({
      status: 200,
      body: { accepted: 1, events: [{ id: 'chunked-1', verdict: 'accepted' }] },
    });
    const frames = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frames.map((frame) => frame.data.content)).toEqual(['in three pieces']);
  });

  it('accepts a Standard Webhooks signed delivery and refuses a stale or tampered one', async () => {
    const secret = 'whsec_' + Buffer.from('another-secret').toString('base64');
    service = await startService({ ...quick, channels: [{ id: 'signed', adapter: 'generic', secret }] });
    const body = JSON.stringify({ id: 's1', sessionKey: 'cli:s', content: 'signed hello' });
    const now = Math.floor(Date.now() / 1000);
    const headers = (ts: number, payload = body) => ({
      'webhook-id': 'msg_s1',
      'webhook-timestamp': String(ts),
      'webhook-signature': `v1,bogus ${standardWebhooks.sign(secret, 'msg_s1', ts, payload)}`,
    });
    expect((await post(body, '/webhooks/signed', headers(now))).status).toBe(200);
    expect(await post(body, '/webhooks/signed', headers(now - 600))).toMatchObject({
      status: 401,
      body: {
        error: {
          code: 'stale_timestamp',
          message: expect.stringMatching(
            /^Stale timestamp on channel "signed": webhook-timestamp is 60\d s old, more than the 5 min Standard Webhooks allows/,
          ),
        },
      },
    });
    const tampered = await post(body.replace('hello', 'HELLO'), '/webhooks/signed', headers(now));
    expect(tampered.status).toBe(401);
    expect(tampered.body.error.message).toMatch(/Signature mismatch on channel "signed"/);
  });

  it('resumes the event stream after Last-Event-ID or ?after= with nothing missing or repeated', async () => {
    service = await startService({ ...quick, debounce: { windowMs: 20, maxMessages: 1 } });
    for (let i = 1; i <= 5; i++) await post({ id: `r${i}`, sessionKey: `cli:r${i}`, content: `n${i}` });
    await until(async () => (await service.intake.store.outboxAfter(0, 10)).length === 5);
    const resumed = await readEvents(`${service.url}/v1/events`, 4, {
      headers: { 'Last-Event-ID': '2' },
      onOpen: () => post({ id: 'r6', sessionKey: 'cli:r6', content: 'n6' }),
    });
    expect(resumed.map((f) => f.data.content)).toEqual(['n3', 'n4', 'n5', 'n6']);
    const viaQuery = await readEvents(`${service.url}/v1/events?after=4`, 2);
    expect(viaQuery.map((f) => f.data.seq)).toEqual([5, 6]);
    const bad = await fetch(`${service.url}/v1/events?after=abc`);
    expect(bad.status).toBe(400);

    const one = await fetch(`${service.url}/v1/events/${resumed[0]!.data.id}`);
    expect(await one.json()).toMatchObject({ event: { content: 'n3', seq: 3 }, delivery: { state: 'none' } });
    expect((await fetch(`${service.url}/v1/events/nope`)).status).toBe(404);
  });

  it('answers 400 to a numeric query parameter given twice or empty, naming it, and opens no stream', async () => {
    service = await startService({ store: 'memory' });
    const cases: Array<[string, string, RegExp]> = [
      ['/v1/events?after=1&after=2', 'bad_resume_point', /after is given 2 times \(after=1&after=2\); give it once/],
      ['/v1/events?after=', 'bad_resume_point', /after is empty/],
      ['/v1/activity?after=0&after=0', 'bad_resume_point', /after is given 2 times/],
      ['/v1/deadletters?limit=', 'bad_limit', /limit is empty; give an integer from 1 to 1000/],
      ['/v1/deadletters?limit=5&limit=7', 'bad_limit', /limit is given 2 times/],
    ];
    for (const [path, code, message] of cases) {
      const response = await fetch(`${service.url}${path}`);
      const body = (await response.json()) as { error: { code: string; message: string } };
      expect([response.status, body.error.code], path).toEqual([400, code]);
      expect(body.error.message, path).toMatch(message);
    }
    expect(((await (await fetch(`${service.url}/v1/stats`)).json()) as { streams: number }).streams).toBe(0);
  });

  it('needs the bearer token on /v1 and /metrics when apiToken is set, and not on health', async () => {
    service = await startService({ server: { apiToken: 'sesame' } });
    expect((await fetch(`${service.url}/v1/stats`)).status).toBe(401);
    expect((await fetch(`${service.url}/metrics`, { headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
    expect((await fetch(`${service.url}/v1/stats`, { headers: { authorization: 'Bearer sesame' } })).status).toBe(200);
    expect((await fetch(`${service.url}/healthz`)).status).toBe(200);
    expect((await fetch(`${service.url}/readyz`)).status).toBe(200);
  });

  it('counts per channel in /metrics and /v1/stats without ids in labels', async () => {
    // On a manual clock the window closes only when the test says: a loaded machine cannot split the batch.
    const clock = new ManualClock();
    service = await startService({ ...quick, debounce: { windowMs: 1000, maxMessages: 3 } }, { clock });
    await post({ id: 'k1', sessionKey: 'cli:secret-user', content: 'a' });
    await post({ id: 'k1', sessionKey: 'cli:secret-user', content: 'a' });
    await post({ id: 'k2', sessionKey: 'cli:secret-user', content: 'b' });
    await clock.advance(1000);
    await until(async () => (await service.intake.store.outboxAfter(0, 10)).length === 1);
    const metrics = await (await fetch(`${service.url}/metrics`)).text();
    expect(metrics).toMatch(/inbox_messages_total\{channel="generic",adapter="generic",action="received"\} 3/);
    expect(metrics).toMatch(/inbox_messages_total\{channel="generic",adapter="generic",action="deduped"\} 1/);
    expect(metrics).toMatch(/inbox_messages_total\{channel="generic",adapter="generic",action="debounced"\} 1/);
    expect(metrics).toMatch(/inbox_messages_total\{channel="generic",adapter="generic",action="emitted"\} 1/);
    expect(metrics).not.toMatch(/secret-user|k1/);
    const stats = (await (await fetch(`${service.url}/v1/stats`)).json()) as any;
    expect(stats.channels.generic).toMatchObject({ received: 3, deduped: 1, debounced: 1, emitted: 1 });
  });

  it('re-arms an open buffer after a restart and still refuses retries of it', async () => {
    const clock = new ManualClock();
    service = await startService({ debounce: { windowMs: 60_000, maxWaitMs: 120_000 } }, { clock });
    const dir = service.dir;
    await post({ id: 'keep-1', sessionKey: 'cli:h', content: 'before' });
    await post({ id: 'keep-2', sessionKey: 'cli:h', content: 'restart' });
    // Close the server without flushing: simulate a crash by stopping timers and closing the store.
    service.server.closeAllConnections();
    service.server.close();
    await service.intake.store.close();

    // Back a minute later: the buffer's window ran out while the service was down.
    const later = new ManualClock(clock.now() + 61_000);
    service = await startService({ debounce: { windowMs: 60_000, maxWaitMs: 120_000 } }, { dir, clock: later });
    expect((await post({ id: 'keep-1', sessionKey: 'cli:h', content: 'before' })).body.events[0].verdict).toBe(
      'duplicate',
    );
    await later.advance(10);
    const frames = await readEvents(`${service.url}/v1/events?after=0`, 1);
    expect(frames[0]?.data).toMatchObject({ content: 'before restart', messageIds: ['keep-1', 'keep-2'] });
  });
});

describe('regression: a resume from before the store started its seqs over', () => {
  // A store that starts its seqs over (the memory store at a restart, a SQLite file deleted)
  // answered a resume whose seq the new store had passed with 200 and only the records after
  // it: those before it were never sent, and nothing said so.
  let service: Running | undefined;
  afterEach(async () => service?.stop());

  for (const kind of ['memory', 'sqlite'] as const) {
    it(`tells a client resuming with an id of the earlier ${kind} store of the reset, then replays the new one whole`, async () => {
      const dir = tempDir().path;
      const file = { ...(kind === 'memory' ? { store: 'memory' } : {}), debounce: { windowMs: 20, maxMessages: 1 } };
      const emit = async (ids: string[]) => {
        for (const id of ids)
          expect(
            (await postJson(`${service!.url}/webhooks/generic`, { id, sessionKey: `cli:${id}`, content: id })).status,
          ).toBe(200);
        await until(async () => (await service!.intake.store.lastSeq()) === ids.length);
      };
      service = await startService(file, { dir });
      await emit(['a1', 'a2', 'a3']);
      const [, , last] = await readEvents(`${service.url}/v1/events?after=0`, 3);
      await service.stop();
      if (kind === 'sqlite')
        for (const name of readdirSync(dir)) if (name.startsWith('intake.db')) rmSync(join(dir, name));
      service = await startService(file, { dir });
      await emit(['b1', 'b2', 'b3', 'b4', 'b5']);
      const frames = await readEvents(`${service.url}/v1/events?after=${encodeURIComponent(last!.id)}`, 6);
      expect(frames[0]).toMatchObject({ event: 'gap', data: { after: 3, next: 1, reset: true } });
      expect(frames.slice(1).map((frame) => frame.data.content)).toEqual(['b1', 'b2', 'b3', 'b4', 'b5']);
    });
  }
});
