import { createHmac } from 'node:crypto';

/**
 * Constant-time comparison of two strings: every character of both is read whatever differs, so
 * the time tells where they differ no more than it tells their length (a length mismatch is a
 * plain `false`, and a signature's format gives its length away anyway). The XOR of every UTF-16
 * unit folded into one value, as crypto.timingSafeEqual does with bytes: copying both strings
 * into Buffers to call it cost ~0.5 µs a compare, more than this loop over a 64-digit digest.
 */
export function safeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let differ = 0;
  for (let i = 0; i < a.length; i++) differ |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return differ === 0;
}

export function hmac(algorithm: 'sha1' | 'sha256', key: string | Buffer, ...parts: Array<string | Buffer>): Buffer {
  const mac = createHmac(algorithm, key);
  for (const part of parts) mac.update(part);
  return mac.digest();
}

/** Standard Webhooks (standardwebhooks.com) signatures: `v1,<base64 HMAC-SHA256(id.timestamp.body)>`. */
export const standardWebhooks = {
  /** The key bytes of a `whsec_<base64>` secret (a secret without the prefix is taken as base64 too). */
  key(secret: string): Buffer {
    return Buffer.from(secret.startsWith('whsec_') ? secret.slice(6) : secret, 'base64');
  },

  sign(secret: string, id: string, timestamp: number, body: string | Buffer): string {
    return `v1,${hmac('sha256', this.key(secret), `${id}.${timestamp}.`, body).toString('base64')}`;
  },

  /**
   * Check the `webhook-signature` header (space-separated `v1,<sig>` entries, for rotation).
   * Returns the reason it fails, or undefined when it verifies.
   */
  verify(
    secret: string,
    headers: { id?: string; timestamp?: string; signature?: string },
    body: Buffer,
    nowSeconds: number,
    toleranceSeconds = 300,
  ): string | undefined {
    const { id, timestamp, signature } = headers;
    if (!id || !timestamp || !signature)
      return 'webhook-id, webhook-timestamp and webhook-signature headers are required';
    if (!/^\d{1,12}$/.test(timestamp)) return 'webhook-timestamp must be whole seconds';
    if (Math.abs(nowSeconds - Number(timestamp)) > toleranceSeconds)
      return `webhook-timestamp is more than ${toleranceSeconds} s from now`;
    const expected = this.sign(secret, id, Number(timestamp), body);
    for (const candidate of signature.split(' ')) if (safeEqual(candidate, expected)) return undefined;
    return 'webhook-signature does not match the body';
  },
};
