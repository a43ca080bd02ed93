import type { SessionIo } from '../../events/connection.js';
import type { AdapterContext } from './access-token.js';

/** How long a gateway's resume cursor is kept unused: a week. */
const CURSOR_TTL_MS = 7 * 24 * 3_600_000;

/**
 * A dialled gateway's resume cursor (Discord's, KOOK's) in the store, so an instance that takes
 * the socket over resumes the session. `save` keeps the cursor as `current()` gives it (one write
 * at a time, the latest value wins; none: forgotten), through the fence of the socket's lease: a
 * holder that lost it never moves or forgets its successor's session. `load` reads it back,
 * undefined when absent or not of the shape `valid` accepts.
 */
export function keptCursor<T>(context: AdapterContext, key: string, current: () => T | undefined) {
  let writing: Promise<void> | undefined;
  let dirty = false;
  return {
    save(io: SessionIo): void {
      dirty = true;
      if (writing) return;
      const put = (value: string, ttlMs: number): Promise<unknown> =>
        io.fence ? io.fence.put(key, value, ttlMs) : context.shared.sharedPut(key, value, ttlMs, context.now());
      const next = async (): Promise<void> => {
        while (dirty) {
          dirty = false;
          const cursor = current();
          await put(cursor ? JSON.stringify(cursor) : '', cursor ? CURSOR_TTL_MS : 1).catch(() => undefined);
        }
        writing = undefined;
      };
      writing = next();
    },

    async load(valid: (parsed: Partial<T>) => boolean): Promise<T | undefined> {
      const kept = await context.shared.sharedGet(key, context.now()).catch(() => undefined);
      if (!kept) return undefined;
      try {
        const parsed = JSON.parse(kept) as Partial<T>;
        return valid(parsed) ? (parsed as T) : undefined;
      } catch {
        return undefined;
      }
    },
  };
}
