import { createHmac } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { fixtureBytes } from '../fixtures/index.js';
import { deliverJson } from '../support/helpers.js';
import { recordingLogger, silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

const SECRET = '8f742231b10e8888abcd99yyyzzz85a5';

/** A Slack delivery of `body` as Slack signs it at `now` (every retry is signed anew). */
function slackDelivery(body: string, now: number, retry?: number) {
  const timestamp = Math.floor(now / 1000);
  const signature = `v0=${createHmac('sha256', SECRET).update(`v0:${timestamp}:${body}`).digest('hex')}`;
  return {
    headers: {
      'x-slack-request-timestamp': String(timestamp),
      'x-slack-signature': signature,
      ...(retry ? { 'x-slack-retry-num': String(retry) } : {}),
    },
    body: Buffer.from(body),
    query: new URLSearchParams(),
    now,
  };
}

describe("exact-id windows that cover each platform's retries", () => {
  let intake: Intake | undefined;
  afterEach(async () => {
    await intake?.close();
    intake = undefined;
  });

  it("sizes a channel's window from its platform's retry horizon unless the channel or a longer global value says otherwise", () => {
    const channels = [
      { id: 'slack', adapter: 'slack', signingSecret: SECRET },
      { id: 'wa', adapter: 'whatsapp', appSecret: 's', verifyToken: 'v' },
      { id: 'generic', adapter: 'generic' },
      { id: 'slack-own', adapter: 'slack', signingSecret: SECRET, dedup: { idTtlMs: 1000 } },
    ];
    const windows = (file: Record<string, unknown>) =>
      Object.fromEntries(
        loadConfig({ env: {}, file: { ...file, channels } }).channels.map((c) => [c.id, c.dedup.idTtlMs]),
      );
    expect(windows({})).toEqual({ slack: 600_000, wa: 7 * 24 * 3_600_000, generic: 300_000, 'slack-own': 1000 });
    expect(windows({ dedup: { idTtlMs: 900_000 } })).toMatchObject({ slack: 900_000, generic: 900_000 });
  });

  it('takes a Slack retry 5 min 30 s after the first delivery as a duplicate, where a 5 min window would not', async () => {
    const clock = new ManualClock();
    intake = await createIntake({
      clock,
      logger: silent,
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        channels: [
          { id: 'slack', adapter: 'slack', signingSecret: SECRET },
          { id: 'generic', adapter: 'generic' },
        ],
      },
    });
    const body = fixtureBytes('slack', 'message.json').toString();
    const first = await intake.ingest('slack', slackDelivery(body, clock.now()));
    expect(first.body).toMatchObject({ accepted: 1, duplicates: 0 });
    await deliverJson(intake, { id: 'g1', sessionKey: 'cli:1', content: 'hi' }, clock.now());
    await clock.advance(330_000);
    const retry = await intake.ingest('slack', slackDelivery(body, clock.now(), 3));
    expect(retry.body).toMatchObject({ accepted: 0, duplicates: 1 });
    // The generic channel keeps the global 5 min: the same gap is past its window.
    expect(
      (await deliverJson(intake, { id: 'g1', sessionKey: 'cli:1', content: 'hi' }, clock.now())).body,
    ).toMatchObject({ accepted: 1 });
  });

  it('counts exact ids evicted past dedup.maxKeys before their window ended, by channel, and warns once', async () => {
    const { logger, lines } = recordingLogger('warn');
    const clock = new ManualClock();
    intake = await createIntake({
      clock,
      logger,
      configFile: { store: 'memory', channels: [{ id: 'generic', adapter: 'generic', dedup: { maxKeys: 2 } }] },
    });
    for (const id of ['a', 'b', 'c', 'd'])
      await deliverJson(intake, { id, sessionKey: `cli:${id}`, content: id }, clock.now());
    const scrape = await intake.metrics.scrape();
    expect(scrape).toMatch(/inbox_dedup_evicted_total\{channel="generic"\} 2/);
    await intake.metrics.scrape();
    await clock.advance(60_000);
    const warnings = lines.filter((line) => /dedup\.maxKeys/.test(line.msg));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({ channel: 'generic' });
    // The evicted id is taken as new: what the warning is about.
    expect((await deliverJson(intake, { id: 'a', sessionKey: 'cli:a', content: 'a' }, clock.now())).body).toMatchObject(
      { accepted: 1 },
    );
  });
});
