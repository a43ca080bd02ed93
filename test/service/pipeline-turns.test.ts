import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/service/configure.js';
import type { Output, ProcessedMessage } from '../../src/events/output.js';
import { createIntake } from '../../src/service/intake.js';
import { deliverJson, tempDir } from '../support/helpers.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/** Messages sent by every intake here: their ids never repeat, so one reopened dedups none. */
let sent = 0;

/** An in-process intake with agent turns on the memory store and a manual clock, collecting its outputs. */
async function turnsIntake(
  turns: Record<string, unknown>,
  channelTurns?: Record<string, unknown>,
  reuse?: { dir: ReturnType<typeof tempDir>; clock: ManualClock },
) {
  const dir = reuse?.dir ?? tempDir();
  const clock = reuse?.clock ?? new ManualClock();
  const config = loadConfig({
    env: {},
    cwd: dir.path,
    file: {
      store: reuse ? 'sqlite:store.db' : 'memory',
      logLevel: 'silent',
      media: { dir: 'media' },
      debounce: { windowMs: 1000 },
      turns,
      ...(channelTurns ? { channels: [{ id: 'generic', adapter: 'generic', turns: channelTurns }] } : {}),
    },
  });
  const intake = await createIntake({ config, logger: silent, cwd: dir.path, clock });
  const outputs: ProcessedMessage[] = [];
  intake.on('chat.processedMessage', (output: Output) => {
    outputs.push(output as ProcessedMessage);
  });
  /** A message of session cli:a, then its debounce window. */
  const say = async (content: string, sessionKey = 'cli:a') => {
    await deliverJson(intake, { id: `m${++sent}`, sessionKey, sender: { id: 'u1' }, content }, clock.now());
    await clock.advance(1100);
    await intake.settle();
  };
  /** The agent is done with an output: its turn closes and what it held comes out. */
  const done = async (id: string) => {
    const answer = await intake.turnDone(id);
    // Released at the scheduler's next grid step.
    await clock.advance(200);
    await intake.settle();
    return answer;
  };
  const close = async () => {
    await intake.close();
    dir.remove();
  };
  const last = () => outputs[outputs.length - 1] as ProcessedMessage;
  return { intake, clock, dir, outputs, say, done, close, last };
}

const links = (output: ProcessedMessage) => ({
  followsUp: output.followsUp,
  during: output.during,
  interrupts: output.interrupts,
});

describe('agent turns in the pipeline', () => {
  it('collect: holds what arrives while the agent answers and emits it as one message following the turn up', async () => {
    const t = await turnsIntake({ mode: 'collect' });
    await t.say('check ORD-123');
    const first = t.last();
    expect(links(first)).toEqual({ followsUp: undefined, during: undefined, interrupts: undefined });
    expect(Object.keys(first)).not.toContain('followsUp');
    await t.say('also ORD-124');
    await t.say('and ORD-125');
    expect(t.outputs).toHaveLength(1);
    expect(await t.intake.turn('cli:a')).toMatchObject({ open: true, outputId: first.id, held: 2 });
    expect(await t.intake.turnDone('nope')).toEqual({ result: 'unknown' });
    expect(await t.done(first.id)).toEqual({ result: 'closed', sessionKey: 'cli:a', held: 2 });
    expect(t.outputs.map((o) => o.content)).toEqual(['check ORD-123', 'also ORD-124 and ORD-125']);
    expect(links(t.last())).toMatchObject({ followsUp: first.id });
    expect(t.last().merged).toBe(2);
    // A second done for the closed turn: answered, nothing emitted twice.
    expect(await t.done(first.id)).toMatchObject({ result: 'already' });
    expect(t.outputs).toHaveLength(2);
    // The outbox body carries the link, as SSE and the push send it.
    expect(JSON.parse((await t.intake.store.outboxGet(t.last().id))?.body ?? '{}')).toMatchObject({
      followsUp: first.id,
    });
    const scrape = await t.intake.metrics.scrape();
    expect(scrape).toMatch(/inbox_messages_total\{channel="generic",adapter="generic",action="held"\} 2/);
    expect(scrape).toMatch(/inbox_turns_open 1/);
    expect(scrape).toMatch(/inbox_turn_hold_seconds_count 2/);
    await t.close();
  });

  it('collect: releases at turns.maxMs without a done, and once maxHeld messages wait', async () => {
    const t = await turnsIntake({ mode: 'collect', maxMs: 5000, maxHeld: 2 });
    await t.say('one');
    await t.say('two');
    expect(t.outputs).toHaveLength(1);
    await t.clock.advance(2000);
    await t.intake.settle();
    expect(t.outputs).toHaveLength(1);
    await t.clock.advance(2000);
    await t.intake.settle();
    expect(t.outputs.map((o) => o.content)).toEqual(['one', 'two']);
    expect(t.last().followsUp).toBe(t.outputs[0]?.id);
    await t.say('three');
    await t.say('four');
    // Two held: the turn counts as closed.
    await t.clock.advance(200);
    await t.intake.settle();
    expect(t.outputs.map((o) => o.content)).toEqual(['one', 'two', 'three four']);
    expect(t.last().followsUp).toBe(t.outputs[1]?.id);
    await t.close();
  });

  it('followup: queues each batch and emits one per closed turn, in order', async () => {
    const t = await turnsIntake({ mode: 'followup' });
    await t.say('first');
    await t.say('second');
    await t.say('third');
    expect(t.outputs).toHaveLength(1);
    await t.done(t.outputs[0]!.id);
    expect(t.outputs.map((o) => o.content)).toEqual(['first', 'second']);
    expect(t.last().followsUp).toBe(t.outputs[0]!.id);
    expect(await t.intake.turn('cli:a')).toMatchObject({ open: true, outputId: t.last().id, held: 1 });
    await t.done(t.outputs[1]!.id);
    expect(t.outputs.map((o) => o.content)).toEqual(['first', 'second', 'third']);
    expect(t.last().followsUp).toBe(t.outputs[1]!.id);
    await t.close();
  });

  it('steer: emits at once during the open turn, which stays open', async () => {
    const t = await turnsIntake({ mode: 'steer' });
    await t.say('book a table');
    await t.say('for four');
    expect(t.outputs.map((o) => o.content)).toEqual(['book a table', 'for four']);
    expect(links(t.last())).toMatchObject({ during: t.outputs[0]!.id, followsUp: undefined });
    expect(await t.intake.turn('cli:a')).toMatchObject({ open: true, outputId: t.outputs[0]!.id });
    await t.close();
  });

  it('interrupt: emits at once, closing the open turn; the new output opens the next', async () => {
    const t = await turnsIntake({ mode: 'interrupt' });
    await t.say('tell me a story');
    await t.say('stop');
    expect(links(t.last())).toMatchObject({ interrupts: t.outputs[0]!.id });
    expect(await t.intake.turn('cli:a')).toMatchObject({ open: true, outputId: t.last().id });
    expect(await t.done(t.outputs[0]!.id)).toMatchObject({ result: 'already' });
    await t.close();
  });

  it('off (the default) tracks nothing; a channel can turn turns on over the global setting', async () => {
    const off = await turnsIntake({});
    await off.say('a');
    await off.say('b');
    expect(off.outputs.map((o) => [o.content, o.followsUp])).toEqual([
      ['a', undefined],
      ['b', undefined],
    ]);
    expect(await off.intake.turn('cli:a')).toEqual({ sessionKey: 'cli:a', open: false, held: 0 });
    await off.close();
    const on = await turnsIntake({ mode: 'off' }, { mode: 'collect' });
    await on.say('a');
    await on.say('b');
    expect(on.outputs).toHaveLength(1);
    await on.close();
  });

  it("keeps sessions apart: a done closes only its own session's turn", async () => {
    const t = await turnsIntake({ mode: 'collect' });
    await t.say('hi', 'cli:a');
    await t.say('hello', 'cli:b');
    await t.say('more', 'cli:a');
    expect(await t.done(t.outputs[1]!.id)).toMatchObject({ result: 'closed', sessionKey: 'cli:b', held: 0 });
    expect(t.outputs).toHaveLength(2);
    expect(await t.intake.turn('cli:a')).toMatchObject({ open: true, held: 1 });
    await t.close();
  });

  it('a restart that turns turns off while messages are held: a new message waits behind them, released under the old rule', async () => {
    const dir = tempDir();
    const clock = new ManualClock();
    const before = await turnsIntake({ mode: 'collect', maxMs: 60_000 }, undefined, { dir, clock });
    await before.say('first');
    await before.say('second');
    expect(before.outputs.map((o) => o.content)).toEqual(['first']);
    const first = before.last();
    await before.intake.close();

    const after = await turnsIntake({ mode: 'off' }, undefined, { dir, clock });
    await after.say('third');
    // Nothing overtakes the held message: 'third' waits with it.
    expect(after.outputs).toEqual([]);
    expect(await after.intake.turn('cli:a')).toMatchObject({ open: true, outputId: first.id, held: 2 });
    await after.done(first.id);
    expect(after.outputs.map((o) => [o.content, o.followsUp])).toEqual([['second third', first.id]]);
    // Nothing is held any more: off emits at once again.
    await after.say('fourth');
    expect(after.outputs.map((o) => o.content)).toEqual(['second third', 'fourth']);
    const all = await after.intake.store.outboxAfter(0, 10);
    expect(all.map((r) => JSON.parse(r.body).content)).toEqual(['first', 'second third', 'fourth']);
    await after.close();
  });
});
