import { once } from 'node:events';
import { describe, expect, it } from 'vitest';
import { fixture } from '../../fixtures/index.js';
import { until } from '../../support/helpers.js';
import { takeoverInstances } from '../../connections/takeover.js';
import { BOT_TOKEN, fakeKook } from './fake-kook.js';

/*
 * Two instances on one real redis-server share one KOOK gateway channel: one holds the socket
 * (the channel's lease); killed with SIGKILL, the survivor takes the lease over and resumes the
 * session from the sn kept in the store. KOOK replays what it thinks was missed: nothing
 * recorded is emitted twice, nothing after the takeover is lost.
 */

const instances = takeoverInstances();

const channel = (apiPort: number) => ({
  id: 'kk',
  adapter: 'kook',
  transport: 'ws',
  botToken: BOT_TOKEN,
  apiBaseUrl: `http://127.0.0.1:${apiPort}`,
  reconnectMinMs: 20,
  reconnectMaxMs: 200,
  leaseMs: 1500,
});

/** A person's message in its own conversation: one output each, no merging. */
const message = (msgId: string, author: string) => {
  const d = fixture('kook', 'text-person.json').d;
  delete d.verify_token;
  return { ...d, msg_id: msgId, content: `message ${msgId}`, author_id: author, msg_timestamp: Date.now() };
};

describe('a KOOK gateway channel on several instances', () => {
  it('is taken over by a survivor when its holder is killed (kill -9), which resumes from the stored sn; nothing twice, nothing lost', async () => {
    const prefix = `kk${process.pid}${Math.floor(Math.random() * 1e6)}`;
    const kook = await fakeKook();
    instances.cleanup(() => kook.close());
    const victim = await instances.victim(prefix, channel(kook.api.port));
    await until(() => kook.open() === 1, 10_000);
    const survivor = await instances.survivor(prefix, channel(kook.api.port));
    const outputs = async () =>
      (await survivor.intake.store.outboxAfter(0, 100)).flatMap((output) => output.messageIds ?? []);
    for (let n = 1; n <= 3; n++) kook.event(message(`k-${n}`, `70${n}`));
    await until(async () => (await outputs()).length === 3, 10_000);
    victim.kill('SIGKILL');
    await once(victim, 'exit');
    // The survivor dials once the victim's lease runs out, resuming the victim's session.
    await until(
      () => kook.paths.length === 2 && kook.open() === 1,
      15_000,
      () => kook.paths,
    );
    const resumed = new URL(kook.paths[1]!, 'ws://x').searchParams;
    expect([resumed.get('resume'), resumed.get('sn'), resumed.get('sessionId')]).toEqual(['1', '3', 'session-1']);
    // KOOK replays the last one it sent, then goes on.
    kook.event(message('k-3', '703'), 3);
    kook.event(message('k-4', '704'));
    await until(async () => (await outputs()).length === 4, 10_000);
    await new Promise((resolve) => setTimeout(resolve, 300)); // a replay emitted twice would show by now
    expect((await outputs()).sort()).toEqual(['k-1', 'k-2', 'k-3', 'k-4']);
  }, 40_000);
});
