import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { SqliteStore } from '../../src/store/sqlite/sqlite.js';
import { run, type Child } from '../support/child.js';
import { tempDir, until } from '../support/helpers.js';

/** In a child process: keep one batch as context on the SQLite file, say so, and wait to be killed. */
const KEEPER = `
const { SqliteStore } = await import(process.env.STORE_ENTRY);
const store = new SqliteStore(process.env.STORE_PATH, { now: 0 });
const event = { id: 'm1', kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c',
  conversation: { type: 'private', id: 's' }, sessionKey: 's', sender: { id: 'u' }, segments: [],
  text: 'm1', media: [], mentions: [], timestamp: 1 };
await store.admit([{ claims: [], closeNow: true, rule: { windowMs: 1000, maxWaitMs: 5000, maxMessages: 10 },
  part: { debounceKey: 's', receivedAt: 0, event } }], 0);
const [batch] = await store.claimDue(0, 60000, 1);
const message = { messageId: 'm1', sender: { id: 'u' }, content: 'm1', timestamp: 1, media: [] };
await store.setActivation('s', { private: 'mention' }, 0);
const kept = await store.keepContext(batch, [message], 0, { maxMessages: 5, ttlMs: 60000 });
process.stdout.write('kept ' + kept + '\\n');
setInterval(() => {}, 1000);
`;

/** In a child process: keep m1 and m2 as context, recall m1, edit m2, start a takeover, say so, and wait to be killed. */
const REVISER = `
const { SqliteStore } = await import(process.env.STORE_ENTRY);
const store = new SqliteStore(process.env.STORE_PATH, { now: 0 });
const event = { id: 'm1', kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c',
  conversation: { type: 'private', id: 's' }, sessionKey: 's', sender: { id: 'u' }, segments: [],
  text: 'm1', media: [], mentions: [], timestamp: 1 };
await store.admit([{ claims: [], closeNow: true, rule: { windowMs: 1000, maxWaitMs: 5000, maxMessages: 10 },
  part: { debounceKey: 's', receivedAt: 0, event } }], 0);
const [batch] = await store.claimDue(0, 60000, 1);
const message = (id) => ({ messageId: id, sender: { id: 'u' }, content: id, timestamp: 1, media: [] });
await store.keepContext(batch, [message('m1'), message('m2')], 0, { maxMessages: 5, ttlMs: 60000 });
const keep = { maxRevisions: 4, ttlMs: 60000 };
const recalled = await store.revise('s', ['s'], { kind: 'recall', messageId: 'm1', at: 1 }, 1, keep);
const edited = await store.revise('s', ['s'], { kind: 'edit', messageId: 'm2', at: 2, content: 'M2' }, 2, keep);
const held = await store.holdTakeover('s', 3, { holdMs: 1000, maxMs: 5000 }, 3);
process.stdout.write('revised ' + recalled.context + ' ' + edited.context + ' ' + held.started + '\\n');
setInterval(() => {}, 1000);
`;

describe('SQLite conversations and kill -9', () => {
  let child: Child | undefined;
  const dir = tempDir();
  afterEach(() => {
    child?.child.kill('SIGKILL');
    dir.remove();
  });

  it('keeps the context and the override of a keepContext that resolved, after kill -9', async () => {
    const path = join(dir.path, 'store.db');
    child = run(process.execPath, ['--input-type=module', '-e', KEEPER], dir.path, {
      STORE_ENTRY: pathToFileURL(join(process.cwd(), 'dist/store/sqlite/sqlite.js')).href,
      STORE_PATH: path,
    });
    await until(() => child!.stdout().includes('kept true') || child!.child.exitCode !== null);
    expect(child.stdout()).toContain('kept true');
    child.child.kill('SIGKILL');
    await child.exited;
    const store = new SqliteStore(path, { now: 0 });
    try {
      const state = await store.conversation('s', 10);
      expect(state.activation).toEqual({ private: 'mention' });
      expect(state.context.map((entry) => entry.message.messageId)).toEqual(['m1']);
      expect(await store.openBuffers()).toBe(0);
    } finally {
      await store.close();
    }
  });
});

describe('SQLite revisions, takeovers and kill -9', () => {
  let child: Child | undefined;
  const dir = tempDir();
  afterEach(() => {
    child?.child.kill('SIGKILL');
    dir.remove();
  });

  it('keeps the revisions, what they changed in the context and the takeover of writes that resolved, after kill -9', async () => {
    const path = join(dir.path, 'revised.db');
    child = run(process.execPath, ['--input-type=module', '-e', REVISER], dir.path, {
      STORE_ENTRY: pathToFileURL(join(process.cwd(), 'dist/store/sqlite/sqlite.js')).href,
      STORE_PATH: path,
    });
    await until(() => child!.stdout().includes('revised') || child!.child.exitCode !== null);
    expect(child.stdout()).toContain('revised true true true');
    child.child.kill('SIGKILL');
    await child.exited;
    const store = new SqliteStore(path, { now: 0 });
    try {
      const state = await store.conversation('s', 10);
      expect(state.context.map((entry) => [entry.message.messageId, entry.message.content])).toEqual([['m2', 'M2']]);
      expect(state.revisions).toEqual([
        { kind: 'recall', messageId: 'm1', at: 1 },
        { kind: 'edit', messageId: 'm2', at: 2, content: 'M2' },
      ]);
      expect(state.takeover).toEqual({ since: 3, until: 1003 });
    } finally {
      await store.close();
    }
  });
});
