/** Where a text's UTF-8 bytes are: `chunk[start, end)`. */
export interface Bytes {
  chunk: Buffer;
  start: number;
  end: number;
}

/** Chunk size: a couple of hundred outbox bodies of about 1 KB. */
const CHUNK_BYTES = 256 * 1024;

/**
 * Texts kept as UTF-8 bytes outside the JS heap, packed into shared chunks. `Buffer.from` per
 * text would make a Buffer object per text (about 100 bytes on the heap, for the young
 * collector to copy) and take them from Node's 8 KB pool, allocating a new pool every few
 * texts (its own `ArrayBuffer`, about 1.5% of the service's CPU at saturation). Here a text
 * costs two small integers and a reference to its chunk; a chunk is freed by the collector
 * once nothing refers to it. A text of more than a quarter chunk gets a chunk of its own.
 *
 * Whoever keeps a text for much longer than its neighbours should `own` it, so it does not
 * hold a whole chunk alive.
 */
export class ByteArena {
  private chunk: Buffer;
  private used = 0;

  constructor(private readonly chunkBytes = CHUNK_BYTES) {
    this.chunk = Buffer.allocUnsafeSlow(chunkBytes);
  }

  put(text: string): Bytes {
    // A UTF-16 code unit is at most 3 bytes of UTF-8: when that much room is left, write at
    // once and take the length from the write. Measuring first is a second pass over the text,
    // about as long as the write itself.
    const worst = text.length * 3;
    if (worst <= this.chunkBytes / 4 && this.used + worst <= this.chunk.length) {
      const start = this.used;
      this.used += this.chunk.write(text, start, 'utf8');
      return { chunk: this.chunk, start, end: this.used };
    }
    const length = Buffer.byteLength(text, 'utf8');
    if (length > this.chunkBytes / 4) return { chunk: Buffer.from(text, 'utf8'), start: 0, end: length };
    if (this.used + length > this.chunk.length) {
      this.chunk = Buffer.allocUnsafeSlow(this.chunkBytes);
      this.used = 0;
    }
    const start = this.used;
    this.chunk.write(text, start, length, 'utf8');
    this.used += length;
    return { chunk: this.chunk, start, end: this.used };
  }
}

/** The text of `bytes`. */
export function textOf(bytes: Bytes): string {
  return bytes.chunk.toString('utf8', bytes.start, bytes.end);
}

/**
 * The same bytes in a buffer of their own (the chunk they were in may then be freed); `bytes`
 * itself when they have one already.
 */
export function own(bytes: Bytes): Bytes {
  if (bytes.start === 0 && bytes.end === bytes.chunk.length) return bytes;
  const copy = Buffer.allocUnsafeSlow(bytes.end - bytes.start);
  bytes.chunk.copy(copy, 0, bytes.start, bytes.end);
  return { chunk: copy, start: 0, end: copy.length };
}
