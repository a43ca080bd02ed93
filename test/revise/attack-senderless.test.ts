import { describe, expect, it } from 'vitest';
import type { InboundEvent } from '../../src/events/inbound.js';
import { messageDebounceKey } from '../../src/service/admission.js';
import { loadConfig } from '../../src/service/configure.js';
import { secondThoughts } from '../../src/service/second-thoughts.js';
import { MemoryStore } from '../../src/store/local/memory.js';
import { event, item } from '../../src/testing/store/fixtures.js';
import { silent } from '../support/logger.js';
import { ManualClock } from '../support/manual-clock.js';

/*
 * A recall that names no sender (Discord's MESSAGE_DELETE and MESSAGE_DELETE_BULK: Discord says
 * not who wrote the message) is looked for in the session's held buffer only, not in the
 * buffer of the sender the message waits in.
 */
describe('a recall naming no sender', () => {
  const session = 'discord:group:c1';

  function composed() {
    const store = new MemoryStore();
    const clock = new ManualClock();
    const config = loadConfig({ env: {}, cwd: '/', file: { store: 'memory', logLevel: 'silent' } });
    const thoughts = secondThoughts({
      config,
      channels: { ids: () => [], get: () => undefined } as never,
      store,
      clock,
      logger: silent,
      admit: async () => ({ accepted: [] }) as never,
      due: () => undefined,
    });
    return { store, clock, thoughts };
  }

  const deletion = (messageId: string): InboundEvent => ({
    ...event('', session),
    kind: 'notice',
    detail: 'message_delete',
    revises: { kind: 'recall', messageId },
  });

  // Found by the sender this process saw send the message: the flush under way loses its lease.
  it('finds a message waiting in its sender buffer and ends that buffer flush lease', async () => {
    const { store, clock, thoughts } = composed();
    const waiting = item('hello', { sessionKey: session, debounceKey: messageDebounceKey(session, 'u') });
    waiting.part.event = { ...waiting.part.event, platformId: 'm1' };
    await store.admit([waiting], clock.now());
    thoughts.revisionKeys.seen(waiting.part.event); // as the pipeline does for what it admits
    const [leased] = await store.claimDue(clock.now() + 5000, 30_000, 10);
    expect(leased).toBeDefined();
    const outcome = await thoughts.revisions.revise(deletion('m1'), thoughts.revisionKeys.of(deletion('m1')));
    expect(outcome).toEqual({ verdict: 'applied', where: 'buffer' });
  });
});
