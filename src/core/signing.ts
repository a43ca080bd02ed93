import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * Constant-time comparison of two strings. A length mismatch is a plain `false`, never the
 * RangeError `timingSafeEqual` throws (which would surface as a 500 instead of a 401).
 */
export function safeEqual(a: string, b: string): boolean {
  const left = Buffer.from(a);
  const right = Buffer.from(b);
  return left.length === right.length && timingSafeEqual(left, right);
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
