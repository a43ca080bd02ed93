import { describe, expect, it } from 'vitest';
import pino from 'pino';
import type { InboundEvent } from '../../src/events/inbound.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { createTakeovers } from '../../src/takeover/stage.js';
import { ManualClock } from '../support/manual-clock.js';

const place = {
  channel: 'qq',
  adapter: 'onebot',
  namespace: 'qq',
  sessionKey: 'qq:group:1',
  conversation: { type: 'group' as const, id: '1' },
};

function setup(operators: string[] = []) {
  const clock = new ManualClock(1_000_000);
  const store = new MemoryStore();
  const told: InboundEvent[] = [];
  const takeovers = createTakeovers({
    clock,
    logger: pino({ level: 'silent' }),
    store,
    options: { holdMs: 1000, maxMs: 2500, operators },
    tell: async (event) => {
      told.push(event);
    },
  });
  const said = () => told.map((event) => [event.fields?.active, Number(event.fields?.until) - 1_000_000]);
  return { clock, store, takeovers, told, said };
}

describe('takeovers', () => {
  it('tells the start once, extends by each human message within maxMs, and tells the end when its time comes', async () => {
    const { clock, takeovers, said } = setup();
    await takeovers.spoke(place, clock.now());
    await clock.advance(800);
    await takeovers.spoke(place, clock.now()); // to 1800
    await clock.advance(900);
    expect(said()).toEqual([['true', 1000]]);
    await takeovers.spoke(place, clock.now()); // at 1700: to 2700, capped at 2500
    await clock.advance(799);
    expect(said()).toEqual([['true', 1000]]);
    await clock.advance(1);
    expect(said()).toEqual([
      ['true', 1000],
      ['false', 2500],
    ]);
    expect(await takeovers.view(place.sessionKey)).toBeUndefined();
  });

  it('ends once when two instances time it: the one whose timer comes first waits for the extension', async () => {
    const { clock, store, takeovers, told, said } = setup();
    const other = createTakeovers({
      clock,
      logger: pino({ level: 'silent' }),
      store,
      options: { holdMs: 1000, maxMs: 2500, operators: [] },
      tell: async (event) => {
        told.push(event);
      },
    });
    await takeovers.spoke(place, clock.now());
    await clock.advance(900);
    await other.spoke(place, clock.now()); // to 1900, timed there by the other
    await clock.advance(100); // the first timer: not yet
    expect(said()).toEqual([['true', 1000]]);
    await clock.advance(900);
    expect(said()).toEqual([
      ['true', 1000],
      ['false', 1900],
    ]);
  });

  it('ends by hand at once, and its timer then does nothing', async () => {
    const { clock, takeovers, said } = setup();
    await takeovers.spoke(place, clock.now());
    await clock.advance(300);
    expect(await takeovers.end(place)).toEqual({ since: 1_000_000, until: 1_001_000 });
    expect(await takeovers.end(place)).toBeUndefined();
    await clock.advance(5000);
    expect(said()).toEqual([
      ['true', 1000],
      ['false', 300],
    ]);
  });

  it('knows operators by namespace and id, or by id alone', () => {
    const { takeovers } = setup(['qq:42', '7']);
    const from = (namespace: string, id: string) => ({ namespace, sender: { id } });
    expect(takeovers.isOperator(from('qq', '42'))).toBe(true);
    expect(takeovers.isOperator(from('tg', '42'))).toBe(false);
    expect(takeovers.isOperator(from('tg', '7'))).toBe(true);
    expect(setup().takeovers.isOperator(from('qq', '42'))).toBe(false);
  });
});
