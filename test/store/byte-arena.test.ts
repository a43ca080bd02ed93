import { describe, expect, it } from 'vitest';
import { ByteArena, own, textOf } from '../../src/store/local/byte-arena.js';

describe('ByteArena', () => {
  it('gives every text back exactly, across chunk boundaries and in any script', () => {
    const arena = new ByteArena(128);
    const texts = ['', 'ascii', '帮我查一下订单', 'emoji 😀 and é', 'x'.repeat(15), '末'.repeat(5)];
    const kept = Array.from({ length: 40 }, (_, i) => texts[i % texts.length] as string).map((text) => ({
      text,
      bytes: arena.put(text),
    }));
    for (const { text, bytes } of kept) expect(textOf(bytes)).toBe(text);
    // Small texts share chunks; a chunk never holds more than its size.
    const chunks = new Set(kept.map(({ bytes }) => bytes.chunk));
    expect(chunks.size).toBeGreaterThan(1);
    expect(chunks.size).toBeLessThan(kept.length);
    for (const chunk of chunks) expect(chunk.length).toBe(128);
  });

  it('gives a text over a quarter chunk a buffer of its own', () => {
    const arena = new ByteArena(64);
    const small = arena.put('a'.repeat(10));
    const big = arena.put('b'.repeat(17));
    expect(big.chunk).not.toBe(small.chunk);
    expect(big.chunk.length).toBe(17);
    expect(textOf(big)).toBe('b'.repeat(17));
    // The next small text still goes to the shared chunk.
    expect(arena.put('c').chunk).toBe(small.chunk);
  });

  it('moves a text out of its shared chunk once, and leaves one that owns its buffer alone', () => {
    const arena = new ByteArena(64);
    const bytes = arena.put('keep me');
    arena.put('neighbour');
    const owned = own(bytes);
    expect(owned.chunk).not.toBe(bytes.chunk);
    expect(owned.chunk.length).toBe(Buffer.byteLength('keep me'));
    expect(textOf(owned)).toBe('keep me');
    expect(own(owned)).toBe(owned);
  });

  it('writes as many bytes as the text takes in UTF-8, lone surrogates included, up to the end of a chunk', () => {
    const arena = new ByteArena(256);
    const first = arena.put('x'.repeat(60));
    for (let i = 0; i < 3; i++) expect(arena.put('x'.repeat(60)).chunk).toBe(first.chunk);
    // 3 UTF-16 units (at most 9 bytes) with 16 bytes of room left: written at once.
    const lone = arena.put('a\ud800b');
    expect(lone.chunk).toBe(first.chunk);
    expect(lone.end - lone.start).toBe(Buffer.byteLength('a\ud800b'));
    expect(textOf(lone)).toBe('a\ufffdb');
    // 11 units (at most 33 bytes) with 11 bytes left, but 11 bytes of ASCII: measured, and fits.
    const tail = arena.put('tail-ends!!');
    expect(tail.chunk).toBe(first.chunk);
    expect(tail.end).toBe(256);
    expect(textOf(tail)).toBe('tail-ends!!');
    // Nothing left: the next text starts a new chunk.
    const next = arena.put('é');
    expect(next.chunk).not.toBe(first.chunk);
    expect(textOf(next)).toBe('é');
  });
});
