import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory.js';
import { SqliteStore } from '../../src/store/sqlite.js';
import type { BufferedPart, ClaimSpec, OutboxDraft, Store } from '../../src/store/types.js';
import { tempDir } from '../helpers.js';

const claim = (key: string, ttlMs = 1000): ClaimSpec => ({ key, space: 'id:c', ttlMs, maxKeys: 100 });
const part = (id: string): BufferedPart => ({
  id, debounceKey: 'k', receivedAt: 1, event: {
    id, kind: 'message', channel: 'c', adapter: 'generic', namespace: 'c', conversation: { type: 'private', id: 's' },
    sessionKey: 's', sender: { id: 'u' }, segments: [], text: id, media: [], mentions: [], timestamp: 1, raw: undefined,
  },
});
const draft = (id: string): OutboxDraft => ({ id, type: 'chat.processedMessage', sessionKey: 's', channel: 'c', createdAt: 1, body: `{"type":"chat.processedMessage","id":"${id}"}`, state: 'none' });

const stores: Array<[string, () => Store]> = [
  ['memory', () => new MemoryStore()],
  ['sqlite', () => new SqliteStore(join(tempDir().path, 's.db'))],
];

describe.each(stores)('%s store', (_name, open) => {
  it('admits a delivery whole: claims in order, parts appended only when every claim is new', async () => {
    const store = open();
    const results = await store.admit([
      { claims: [claim('a')], part: part('1') },
      { claims: [claim('a')], part: part('2') },
      { claims: [claim('b'), claim('a')], part: part('3') },
    ], 0);
    expect(results.map((r) => r.taken)).toEqual([-1, 0, 1]);
    expect((await store.openParts()).map((p) => p.id)).toEqual(['1']);
    expect((await store.admit([{ claims: [claim('b')] }], 10)).map((r) => r.taken)).toEqual([0]);
    expect((await store.admit([{ claims: [claim('a')] }], 1000)).map((r) => r.taken)).toEqual([-1]);
    await store.close();
  });

  it('moves a flushed batch from the buffer to the outbox in one step, with increasing seqs', async () => {
    const store = open();
    await store.admit([{ claims: [], part: part('1') }, { claims: [], part: part('2') }], 0);
    const first = await store.flush(['1', '2'], draft('o1'));
    const second = await store.flush([], draft('o2'));
    expect(second.seq).toBeGreaterThan(first.seq);
    expect(await store.openParts()).toEqual([]);
    expect((await store.outboxAfter(first.seq, 10)).map((r) => r.id)).toEqual(['o2']);
    expect((await store.outboxGet('o1'))?.seq).toBe(first.seq);
    await store.close();
  });

  it('never trims what still waits for delivery', async () => {
    const store = open();
    await store.flush([], { ...draft('pending'), state: 'pending' });
    await store.flush([], draft('done'));
    await store.flush([], draft('new'));
    await store.trimOutbox(Number.MAX_SAFE_INTEGER, 0);
    expect((await store.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['pending']);
    await store.close();
  });
});

describe('sqlite store', () => {
  it('keeps claims, parts and the outbox across a reopen', async () => {
    const path = join(tempDir().path, 'r.db');
    const store = new SqliteStore(path, 0);
    await store.admit([{ claims: [claim('kept', 60_000)], part: part('1') }], 0);
    await store.flush([], draft('o1'));
    await store.close();
    const again = new SqliteStore(path, 10);
    expect((await again.admit([{ claims: [claim('kept', 60_000)] }], 10))[0]?.taken).toBe(0);
    expect((await again.openParts()).map((p) => p.id)).toEqual(['1']);
    expect((await again.outboxAfter(0, 10)).map((r) => r.id)).toEqual(['o1']);
    await again.close();
  });

  it('fails only the write that fails when writes share a commit', async () => {
    const store = new SqliteStore(join(tempDir().path, 'g.db'));
    const results = await Promise.allSettled([
      store.admit([{ claims: [claim('x')], part: part('7') }], 0),
      store.admit([{ claims: [claim('y')], part: part('7') }], 0), // duplicate primary key: fails
      store.admit([{ claims: [claim('z')], part: part('8') }], 0),
    ]);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    // The failed write's claim was rolled back with it: a retry can still claim it.
    expect((await store.admit([{ claims: [claim('y')] }], 1))[0]?.taken).toBe(-1);
    expect((await store.openParts()).map((p) => p.id).sort()).toEqual(['7', '8']);
    await store.close();
  });
});

describe('outbox trimming', () => {
  it.each(stores)('%s keeps the newest keepCount records and everything younger than the cutoff', async (_name, open) => {
    const store = open();
    for (let i = 1; i <= 10; i++) await store.flush([], { ...draft(`o${i}`), createdAt: i * 1000 });
    await store.trimOutbox(0, 4);
    expect((await store.outboxAfter(0, 20)).map((r) => r.id)).toEqual(['o7', 'o8', 'o9', 'o10']);
    await store.trimOutbox(9000, 100);
    expect((await store.outboxAfter(0, 20)).map((r) => r.id)).toEqual(['o9', 'o10']);
    await store.close();
  });
});
