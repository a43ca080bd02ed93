import type { OutboxRecord } from '../../core/ports/index.js';
import type { ConnectionLogger } from './connections.js';

/**
 * A commit on Redis can run and only its answer be lost: a command timeout (an error), or a
 * reconnection after which ioredis sends the script again and the fence it used up refuses it
 * (no record). The outbox says whether it ran: the draft id is new on every attempt, so a
 * record under it is this attempt's. Then the commit is answered with that record, and its
 * output is published once, as if the answer had come.
 */
export async function committedDespiteLostAnswer(
  commit: () => Promise<OutboxRecord | undefined>,
  recorded: () => Promise<OutboxRecord | undefined>,
  logger: ConnectionLogger | undefined,
  sessionKey: string,
): Promise<OutboxRecord | undefined> {
  let failure: unknown;
  try {
    const record = await commit();
    if (record) return record;
  } catch (error) {
    failure = error;
  }
  const found = await recorded().catch(() => undefined);
  if (found) {
    logger?.warn(
      { err: failure, sessionKey, seq: found.seq },
      'flush commit answered late or failed, but its output is in the outbox; published',
    );
    return found;
  }
  if (failure !== undefined) throw failure;
  return undefined;
}
