import { afterEach, describe, expect, it } from 'vitest';
import type { ProcessedMessage as Output } from '../../../src/events/output.js';
import { createIntake, type Intake } from '../../../src/service/intake.js';
import { until } from '../../support/helpers.js';
import { silent } from '../../support/logger.js';
import { ManualClock } from '../../support/manual-clock.js';
import { serve } from '../../support/servers.js';
import { BOT_TOKEN, fakeGateway } from '../../connections/fake-gateway.js';
import { metric } from '../../connections/scrape.js';

describe('the Discord Gateway under faults', () => {
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });
  const start = async (
    settings: Record<string, unknown>,
    clock?: ManualClock,
  ): Promise<{ intake: Intake; outputs: Output[] }> => {
    const intake = await createIntake({
      logger: silent,
      ...(clock ? { clock } : {}),
      configFile: {
        store: 'memory',
        logLevel: 'silent',
        debounce: { windowMs: 50, maxWaitMs: 200 },
        channels: [
          { id: 'dc', adapter: 'discord', botToken: BOT_TOKEN, reconnectMinMs: 20, reconnectMaxMs: 100, ...settings },
        ],
      },
    });
    cleanups.push(() => intake.close());
    const outputs: Output[] = [];
    intake.on('chat.processedMessage', (output) => {
      outputs.push(output);
    });
    return { intake, outputs };
  };

  it('resumes the session after the server closes with 4000 (unknown error), and identifies anew after 4007 (invalid seq)', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const clock = new ManualClock();
    const { outputs } = await start({ gatewayUrl: gateway.url }, clock);
    const moving = (condition: () => boolean) =>
      until(async () => {
        await clock.advance(200);
        return condition();
      });
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    gateway.dispatch({ id: '1', content: 'before 4000' });
    await moving(() => outputs.length === 1);
    gateway.closeNewest(4000, 'Unknown error');
    await moving(() => gateway.resumes().length === 1 && gateway.open() === 1);
    expect(gateway.resumes()[0]?.d).toMatchObject({ session_id: 'session-1' });
    expect(gateway.identifies()).toBe(1);
    gateway.dispatch({ id: '2', content: 'after the resume' });
    await moving(() => outputs.length === 2);
    gateway.closeNewest(4007, 'Invalid seq');
    // A new session (after the 5 s identify spacing, on the clock), never a resume.
    await moving(() => gateway.identifies() === 2 && gateway.open() === 1);
    expect(gateway.resumes().length).toBe(1);
    gateway.dispatch({ id: '3', content: 'in the new session' });
    await moving(() => outputs.length === 3);
    expect(outputs.map((output) => output.content)).toEqual(['before 4000', 'after the resume', 'in the new session']);
  });

  it("waits out reset_after when Discord's daily session starts are used up, then identifies", async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const api = await serve((_req, res, hits) => {
      res.setHeader('content-type', 'application/json');
      const remaining = hits === 1 ? 0 : 999;
      res.end(
        JSON.stringify({
          url: gateway.url,
          shards: 1,
          session_start_limit: { total: 1000, remaining, reset_after: 60_000, max_concurrency: 1 },
        }),
      );
    });
    cleanups.push(() => api.close());
    const clock = new ManualClock();
    await start({ apiBaseUrl: `http://127.0.0.1:${api.port}`, leaseMs: 300_000 }, clock);
    await clock.armed(60_000);
    await clock.advance(59_000);
    expect(api.total()).toBe(1);
    expect(gateway.state.paths).toEqual([]);
    await clock.advance(1000);
    await until(async () => {
      await clock.advance(10);
      return gateway.identifies() === 1;
    });
    expect(api.total()).toBe(2);
  });

  it('counts the Gateway in inbox_connections and inbox_connection_events_total (open, reconnect, close)', async () => {
    const gateway = await fakeGateway();
    cleanups.push(() => gateway.close());
    const { intake } = await start({ gatewayUrl: gateway.url });
    await until(() => gateway.identifies() === 1 && gateway.open() === 1);
    const series = (event: string) =>
      `inbox_connection_events_total{channel="dc",transport="gateway",event="${event}"}`;
    await until(
      async () => metric(await intake.metrics.scrape(), 'inbox_connections{channel="dc",transport="gateway"}') === 1,
    );
    expect(metric(await intake.metrics.scrape(), series('open'))).toBe(1);
    gateway.closeNewest(4000, 'Unknown error');
    await until(async () => metric(await intake.metrics.scrape(), series('reconnect')) === 1);
    expect(metric(await intake.metrics.scrape(), series('close'))).toBe(1);
    await intake.close();
    const scrape = await intake.metrics.scrape();
    expect(metric(scrape, series('close'))).toBe(2);
    expect(metric(scrape, 'inbox_connections{channel="dc",transport="gateway"}')).toBe(0);
  });

  describe('regression: a Gateway that answers every resume with INVALID_SESSION d=true', () => {
    it('identifies anew after two failed resumes, 1 to 5 s after the second invalid session', async () => {
      const gateway = await fakeGateway();
      cleanups.push(() => gateway.close());
      const clock = new ManualClock();
      await start({ gatewayUrl: gateway.url }, clock);
      await until(() => gateway.identifies() === 1 && gateway.open() === 1);
      await clock.advance(6000); // past the identify spacing, so only the invalid session's wait is left
      gateway.state.invalidResume = true;
      gateway.closeNewest(4000, 'Unknown error');
      let invalidAt = 0;
      await until(async () => {
        await clock.advance(50);
        if (!invalidAt && gateway.resumes().length === 2) invalidAt = clock.now();
        return gateway.identifies() === 2;
      }, 10_000);
      expect(gateway.received.filter((frame) => frame.op === 2 || frame.op === 6).map((frame) => frame.op)).toEqual([
        2, 6, 6, 2,
      ]);
      // Discord: after an invalid session, wait a random 1-5 s before a fresh Identify.
      expect(clock.now() - invalidAt).toBeGreaterThanOrEqual(900);
      expect(clock.now() - invalidAt).toBeLessThanOrEqual(5500);
    });
  });
});
