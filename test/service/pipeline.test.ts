import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import type { InboundEvent } from '../../src/events/inbound.js';
import type { Output } from '../../src/events/output.js';
import { createIntake, type Intake } from '../../src/service/intake.js';
import { isIntakeError } from '../../src/core/errors.js';
import { postJson, startService, tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** An in-process intake on the memory store and a manual clock, collecting what it emits. */
async function intakeWithOutputs() {
  const dir = tempDir();
  const clock = new ManualClock();
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: { store: 'memory', logLevel: 'silent', media: { dir: 'media' }, debounce: { windowMs: 1000 } },
  });
  const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
  const contents: string[] = [];
  intake.on('chat.processedMessage', (output: Output) => {
    contents.push((output as { content: string }).content);
  });
  const send = (body: Record<string, unknown>) =>
    intake.ingest('generic', {
      headers: { 'content-type': 'application/json' },
      query: new URLSearchParams(),
      now: clock.now(),
      body: Buffer.from(JSON.stringify(body)),
    });
  const done = async () => {
    await intake.close();
    dir.remove();
  };
  return { intake, clock, contents, send, done };
}

describe('the inbound chain (intake.use)', () => {
  it('drops an event whose middleware does not call next: answered ignored, recorded nowhere, counted', async () => {
    const { intake, clock, contents, send, done } = await intakeWithOutputs();
    const blocked = new Set(['spammer']);
    intake.use(async (event, next) => {
      if (!blocked.has(event.sender.id)) await next();
    });
    const answer = await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'spammer' }, content: 'buy now' });
    expect(answer.body).toEqual({ accepted: 0, duplicates: 0, events: [{ id: 'm1', verdict: 'ignored' }] });
    await clock.advance(2000);
    expect(contents).toEqual([]);
    expect(await intake.store.openBuffers()).toBe(0);
    expect(await intake.metrics.scrape()).toMatch(
      /inbox_messages_total\{channel="generic",adapter="generic",action="ignored"\} 1/,
    );
    // Nothing was claimed: once the sender is allowed, the same id is new, not a duplicate.
    blocked.clear();
    const again = await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'spammer' }, content: 'buy now' });
    expect(again.body).toEqual({ accepted: 1, duplicates: 0, events: [{ id: 'm1', verdict: 'accepted' }] });
    await clock.advance(2000);
    expect(contents).toEqual(['buy now']);
    await done();
  });

  it('runs the steps in use order, and what they change is what dedup, buffering and the output see', async () => {
    const { intake, clock, contents, send, done } = await intakeWithOutputs();
    const seen: string[] = [];
    intake
      .use(async (event, next) => {
        seen.push(`first:${event.text}`);
        event.text = event.text.toUpperCase();
        await next();
        seen.push('first:after');
      })
      .use(async (event: InboundEvent, next) => {
        seen.push(`second:${event.text}`);
        event.text = `[vip] ${event.text}`;
        await next();
      });
    await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'hello' });
    expect(seen).toEqual(['first:hello', 'second:HELLO', 'first:after']);
    await clock.advance(2000);
    expect(contents).toEqual(['[vip] HELLO']);
    await done();
  });

  it('refuses the whole delivery with a 500 when a step throws, and records nothing of it', async () => {
    const { intake, clock, contents, send, done } = await intakeWithOutputs();
    let broken = true;
    intake.use(async (_event, next) => {
      if (broken) throw new Error('allow-list service unreachable');
      await next();
    });
    const failure = await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'hello' }).catch(
      (error: unknown) => error,
    );
    expect(isIntakeError(failure) && { code: failure.code, status: failure.status }).toEqual({
      code: 'middleware_failed',
      status: 500,
    });
    expect((failure as Error).message).toBe(
      'An inbound middleware (intake.use) failed on channel "generic": allow-list service unreachable; nothing was recorded',
    );
    expect(await intake.store.openBuffers()).toBe(0);
    broken = false;
    const retried = await send({ id: 'm1', sessionKey: 'cli:a', sender: { id: 'u1' }, content: 'hello' });
    expect(retried.body).toMatchObject({ accepted: 1, duplicates: 0 });
    await clock.advance(2000);
    expect(contents).toEqual(['hello']);
    await done();
  });

  it('answers a webhook whose middleware failed with the error body and counts it rejected', async () => {
    const running = await startService({ channels: [{ id: 'generic', adapter: 'generic' }] });
    const intake: Intake = running.intake;
    intake.use(() => {
      throw new Error('nope');
    });
    const answer = await postJson(`${running.url}/webhooks/generic`, { id: 'm1', sessionKey: 'cli:a', content: 'hi' });
    expect(answer.status).toBe(500);
    expect(answer.body.error.code).toBe('middleware_failed');
    expect(await intake.metrics.scrape()).toMatch(/action="rejected"\} 1/);
    await running.stop();
  });
});
