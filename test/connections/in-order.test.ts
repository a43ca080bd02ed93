import { describe, expect, it } from 'vitest';
import { inOrder } from '../../src/connections/in-order.js';
import type { InOrder } from '../../src/events/transport.js';

/** A delivery that waits, as the pipeline does: `pre` turns of the loop before admission, then admission, then its end. */
function delivery(log: string[], name: string, ends: Promise<void>, pre = 0) {
  return async (turn: InOrder) => {
    for (let i = 0; i < pre; i++) await new Promise((resolve) => setImmediate(resolve));
    log.push(`${name} admitted`);
    turn.reached();
    await ends;
    log.push(`${name} done`);
    return name;
  };
}

describe('inOrder: the deliveries of one read', () => {
  it('starts each once the one before reached admission, so they reach it in arrival order however long their steps take', async () => {
    const log: string[] = [];
    let end!: () => void;
    const ends = new Promise<void>((resolve) => (end = resolve));
    // The first has the slowest steps before admission: started all at once, it would come last.
    const steps = [delivery(log, 'a', ends, 3), delivery(log, 'b', ends, 1), delivery(log, 'c', ends)];
    const running = inOrder(steps, (step, turn) => step(turn));
    await new Promise((resolve) => setTimeout(resolve, 20));
    // All three admitted before any ended: one store step can take them together.
    expect(log).toEqual(['a admitted', 'b admitted', 'c admitted']);
    end();
    expect(await running).toEqual(['a', 'b', 'c']);
  });

  it('goes on after a delivery that ended without reaching admission (a meta frame, a refused one)', async () => {
    const seen: string[] = [];
    const result = await inOrder(['meta', 'event'], async (name, turn) => {
      seen.push(name);
      if (name === 'event') turn.reached();
      return name.length;
    });
    expect(seen).toEqual(['meta', 'event']);
    expect(result).toEqual([4, 5]);
  });

  it("lets a step wait for the earlier deliveries' ends (an edit whose message came just before it)", async () => {
    const log: string[] = [];
    let end!: () => void;
    const ends = new Promise<void>((resolve) => (end = resolve));
    const running = inOrder(['message', 'edit'], async (name, turn) => {
      if (name === 'edit') {
        const waiting = turn.earlier().then(() => log.push('edit saw the message recorded'));
        end();
        await waiting;
        turn.reached();
        return name;
      }
      turn.reached();
      await ends;
      log.push('message recorded');
      return name;
    });
    expect(await running).toEqual(['message', 'edit']);
    expect(log).toEqual(['message recorded', 'edit saw the message recorded']);
  });

  it('runs a read of one frame with no turn to wait on', async () => {
    const turns: InOrder[] = [];
    await inOrder(['only'], async (_, turn) => {
      turns.push(turn);
      turn.reached();
      await turn.earlier();
    });
    expect(turns).toHaveLength(1);
  });
});
