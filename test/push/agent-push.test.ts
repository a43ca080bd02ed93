import { afterEach, describe, expect, it } from 'vitest';
import type { OutboxDraft } from '../../src/core/ports/index.js';
import type { PushLease, PushOutcome, Store } from '../../src/core/ports/index.js';
import { defaults } from '../../src/config/schema.js';
import { AgentPush } from '../../src/push/agent-push.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { until } from '../support/helpers.js';
import { recordingLogger, silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';
import { serve, type TestServer } from '../support/servers.js';

const SECRET = 'whsec_' + Buffer.from('agent-shared-secret-0123456789').toString('base64');

/** Put one pending record in the store's push queue, as a flush would. */
async function enqueue(store: Store, id: string, sessionKey: string, now: number): Promise<void> {
  const [verdict] = await store.admit(
    [
      {
        claims: [],
        rule: { windowMs: 0, maxWaitMs: 0, maxMessages: 1 },
        closeNow: true,
        part: {
          debounceKey: `${sessionKey}:${id}`,
          receivedAt: now,
          event: {
            id,
            kind: 'message',
            channel: 'c',
            adapter: 'generic',
            namespace: 'c',
            conversation: { type: 'private', id: sessionKey },
            sessionKey,
            sender: { id: 'u' },
            segments: [],
            text: id,
            media: [],
            mentions: [],
            timestamp: 0,
            raw: undefined,
          },
        },
      },
    ],
    now,
  );
  expect(verdict?.verdict).toBe('accepted');
  const [batch] = await store.claimDue(now, 30_000, 1);
  const draft: OutboxDraft = {
    id,
    type: 'chat.processedMessage',
    sessionKey,
    channel: 'c',
    createdAt: now,
    body: JSON.stringify({ type: 'chat.processedMessage', id }),
    state: 'pending',
  };
  expect(await store.commit(batch!, draft, now)).toBeDefined();
}

describe('AgentPush', () => {
  let agent: TestServer | undefined;
  afterEach(async () => agent?.close());

  it('keeps a delivered record delivered when the store fails to record it at first, with exact counts', async () => {
    agent = await serve((_req, res) => res.end());
    const store = new MemoryStore();
    const clock = new ManualClock();
    await enqueue(store, 'o1', 's', clock.now());
    const outcomes: PushOutcome[] = [];
    let failures = 2;
    const queue = {
      claimPush: store.claimPush.bind(store),
      nextPushAt: store.nextPushAt.bind(store),
      deliveryCounts: store.deliveryCounts.bind(store),
      deadLetters: store.deadLetters.bind(store),
      requeueDead: store.requeueDead.bind(store),
      async ackPush(lease: PushLease, outcome: PushOutcome, now: number) {
        outcomes.push(outcome);
        if (failures-- > 0) throw new Error('disk I/O error');
        return store.ackPush(lease, outcome, now);
      },
    };
    const push = new AgentPush({
      config: {
        url: `http://127.0.0.1:${agent.port}/inbox`,
        secret: SECRET,
        retries: 3,
        timeoutMs: 5000,
        concurrency: 4,
        maxPending: 100,
        minBackoffMs: 10,
        maxBackoffMs: 100,
      },
      queue,
      clock,
      logger: silent,
      onAttempt: () => undefined,
    });
    await push.start();
    await until(async () => (await store.outboxGet('o1'))?.state === 'delivered');
    // Every write asked for "delivered"; none turned it into a dead letter.
    expect(outcomes.map((o) => o.state)).toEqual(['delivered', 'delivered', 'delivered']);
    expect(await store.deliveryCounts()).toEqual({ pending: 0, dead: 0 });
    expect([push.pending, push.dead]).toEqual([0, 0]);
    expect(agent.hits.get('/inbox')).toBe(1);
    await push.close();
  });

  it('schedules a retry in the store at the backoff the clock says, honouring Retry-After', async () => {
    let n = 0;
    agent = await serve((_req, res) => {
      n++;
      if (n === 1) {
        res.statusCode = 503;
        res.setHeader('retry-after', '3');
      }
      res.end();
    });
    const store = new MemoryStore();
    const clock = new ManualClock();
    await enqueue(store, 'o1', 's', clock.now());
    const push = new AgentPush({
      config: {
        url: `http://127.0.0.1:${agent.port}/inbox`,
        secret: SECRET,
        retries: 3,
        timeoutMs: 5000,
        concurrency: 4,
        maxPending: 100,
        minBackoffMs: 10,
        maxBackoffMs: 60_000,
      },
      queue: store,
      clock,
      logger: silent,
      random: () => 0,
      onAttempt: () => undefined,
    });
    await push.start();
    await until(async () => (await store.outboxGet('o1'))?.attempts === 1);
    expect(await store.outboxGet('o1')).toMatchObject({
      state: 'pending',
      attempts: 1,
      lastError: 'agent answered HTTP 503',
    });
    await clock.advance(2_999);
    expect(n).toBe(1);
    await clock.advance(1);
    await until(async () => (await store.outboxGet('o1'))?.state === 'delivered');
    expect(n).toBe(2);
    await push.close();
  });
});

describe('AgentPush with the default schedule', () => {
  let agent: TestServer | undefined;
  afterEach(async () => agent?.close());

  it('keeps retrying an agent that is down for about a day before the message is a dead letter', async () => {
    agent = await serve((_req, res) => {
      res.statusCode = 503;
      res.end();
    });
    const store = new MemoryStore();
    const clock = new ManualClock();
    const start = clock.now();
    await enqueue(store, 'o1', 's', start);
    const { retries, minBackoffMs, maxBackoffMs } = defaults.agent;
    const push = new AgentPush({
      config: {
        url: `http://127.0.0.1:${agent.port}/inbox`,
        secret: SECRET,
        retries,
        timeoutMs: 5000,
        concurrency: 4,
        maxPending: 100,
        minBackoffMs,
        maxBackoffMs,
      },
      queue: store,
      clock,
      logger: silent,
      random: () => 0.5,
      onAttempt: () => undefined,
    });
    await push.start();
    const attemptsAt: number[] = [];
    for (;;) {
      const seen = attemptsAt.length;
      await until(async () => (await store.outboxGet('o1'))?.attempts === seen + 1);
      attemptsAt.push(clock.now());
      const record = await store.outboxGet('o1');
      if (record?.state === 'dead') break;
      expect(record?.state).toBe('pending');
      await clock.advance((record?.nextAttemptAt ?? clock.now()) - clock.now());
    }
    const hours = (at: number) => (at - start) / 3_600_000;
    expect(attemptsAt).toHaveLength(retries);
    // A 2-minute redeploy, an hour, a night: still pending. The last attempt comes about a day after the first.
    expect(attemptsAt.filter((at) => hours(at) < 1 / 30).length).toBeLessThan(10);
    expect(hours(attemptsAt.at(-1) as number)).toBeGreaterThan(22);
    expect(hours(attemptsAt.at(-1) as number)).toBeLessThan(27);
    // Never more than an hour apart once capped.
    const gaps = attemptsAt.slice(1).map((at, i) => at - (attemptsAt[i] as number));
    expect(Math.max(...gaps)).toBeLessThanOrEqual(maxBackoffMs);
    expect(agent.hits.get('/inbox')).toBe(retries);
    await push.close();
  }, 60_000);
});

describe('regression: an agent that answers only after agent.timeoutMs', () => {
  let agent: TestServer | undefined;
  afterEach(async () => agent?.close());

  /** An agent that holds its first push until the pusher gives up on it, then answers the next at once. */
  async function slowFirstAnswer(): Promise<{ ids: string[] }> {
    const ids: string[] = [];
    agent = await serve((req, res, n) => {
      ids.push(String(req.headers['webhook-id']));
      req.resume();
      if (n === 1) return; // still thinking: answered never, the pusher's timeout closes the socket
      res.setHeader('content-type', 'application/json');
      res.end('{"turn":"done"}');
    });
    return { ids };
  }

  async function run(turnsOn: boolean): Promise<{ lines: string[]; ids: string[]; store: MemoryStore }> {
    const { ids } = await slowFirstAnswer();
    const { logger, lines } = recordingLogger('warn');
    const store = new MemoryStore();
    const clock = new ManualClock();
    await enqueue(store, 'o1', 's', clock.now());
    const push = new AgentPush({
      config: {
        url: `http://127.0.0.1:${agent!.port}/inbox`,
        secret: SECRET,
        retries: 3,
        timeoutMs: 100,
        concurrency: 4,
        maxPending: 100,
        minBackoffMs: 1000,
        maxBackoffMs: 1000,
      },
      queue: store,
      clock,
      logger,
      random: () => 0,
      onAttempt: () => undefined,
      turns: { on: (channel) => turnsOn && channel === 'c', answered: async () => undefined },
    });
    await push.start();
    await until(async () => (await store.outboxGet('o1'))?.attempts === 1, 5000);
    expect(await store.outboxGet('o1')).toMatchObject({ state: 'pending' });
    await clock.advance(1000);
    await until(async () => (await store.outboxGet('o1'))?.state === 'delivered', 5000);
    await push.close();
    return { lines: lines.map((line) => line.msg), ids, store };
  }

  it('logs the timeout with its setting and how to close the turn instead, then sends the message again with the same webhook-id', async () => {
    const { lines, ids, store } = await run(true);
    expect(ids).toEqual(['o1', 'o1']);
    expect(lines).toEqual([
      `push to agent failed: push to http://127.0.0.1:${agent!.port}/inbox timed out after 100 ms (agent.timeoutMs); answer the push at once (2xx) and close the turn with POST /v1/turns/o1/done when the agent is done; it is sent again (the same webhook-id) after a backoff`,
    ]);
    expect(await store.outboxGet('o1')).toMatchObject({ state: 'delivered', attempts: 2 });
  });

  it('says to answer at once or raise agent.timeoutMs, without a turn hint, where the channel keeps no turns', async () => {
    const { lines } = await run(false);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(
      `timed out after 100 ms (agent.timeoutMs); answer the push with 2xx as soon as the message is received, or raise agent.timeoutMs`,
    );
    expect(lines[0]).not.toContain('/v1/turns/');
  });
});
