/** Deterministic fuzzing of platform payloads: valid fixtures with nested values replaced. */

/** mulberry32: a small seeded generator, so every run fuzzes the same variants. */
export function seeded(seed: number): () => number {
  let a = seed;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** What a hostile or broken sender puts where a value belongs. */
export const replacements: ReadonlyArray<() => unknown> = [
  () => null,
  () => 0,
  () => -1,
  () => '',
  () => [],
  () => ({}),
  () => [null],
  () => 'x',
  () => 'constructor',
  () => '__proto__',
  () => 'toString',
  () => Number.POSITIVE_INFINITY,
  () => 2 ** 60,
  () => true,
  () => [0],
  () => [{}],
  () => ({ id: {} }),
  () => 'hasOwnProperty',
  () => 1710234567000,
];

type Path = Array<string | number>;

function paths(value: unknown, at: Path = [], out: Path[] = []): Path[] {
  if (at.length > 0) out.push(at);
  if (Array.isArray(value)) value.forEach((item, i) => paths(item, [...at, i], out));
  else if (typeof value === 'object' && value !== null)
    for (const key of Object.keys(value)) paths((value as Record<string, unknown>)[key], [...at, key], out);
  return out;
}

function setAt(root: unknown, path: Path, value: unknown): void {
  let node = root as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  node[path[path.length - 1] as string | number] = value;
}

/** `count` variants of `samples`, each with one to three nested values replaced (or the whole body). */
export function variants(samples: readonly unknown[], count: number, seed: number): unknown[] {
  const next = seeded(seed);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(next() * list.length)] as T;
  const out: unknown[] = [];
  for (let i = 0; i < count; i++) {
    const copy = structuredClone(pick(samples));
    const candidates = paths(copy);
    if (candidates.length === 0 || next() < 0.03) {
      out.push(pick(replacements)());
      continue;
    }
    const edits = 1 + Math.floor(next() * 3);
    for (let e = 0; e < edits; e++) {
      const live = paths(copy);
      if (live.length === 0) break;
      setAt(copy, pick(live), pick(replacements)());
    }
    out.push(copy);
  }
  return out;
}

/** Valid generic-channel bodies (docs/channels.md, "generic"), the generic channel's fixtures. */
export const genericSamples = [
  {
    id: 'msg_1',
    sessionKey: 'cli:alice',
    sender: { id: 'alice', name: 'Alice' },
    content: '重启服务',
    timestamp: 1710234567,
  },
  {
    sessionKey: 'cli:bob',
    content: 'hi',
    mediaUrl: 'https://example.com/a.png',
    mimeType: 'image/png',
    conversation: { type: 'group', id: 'g1' },
  },
  {
    id: 7,
    sessionKey: 'cli:c',
    media: [{ url: 'https://example.com/a.png', mimeType: 'image/png' }, { url: 'https://example.com/b.pdf' }],
    sender: { id: 3 },
  },
  [
    { sessionKey: 'cli:d', content: 'one' },
    { sessionKey: 'cli:d', content: 'two', id: 'x' },
  ],
];
