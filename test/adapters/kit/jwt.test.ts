import { afterEach, describe, expect, it } from 'vitest';
import { remoteKeys, verifyBearer } from '../../../src/adapters/kit/jwt.js';
import type { ChannelConfig } from '../../../src/config/schema.js';
import { SignatureError, StaleTimestampError } from '../../../src/core/errors.js';
import { startKeyServer, type KeyServer } from '../../support/jwks.js';

const channel = { id: 'gc' } as ChannelConfig;
const rule = { issuer: 'chat@system.gserviceaccount.com', audience: 'aud', platform: 'Google Chat' };
const delivery = (token: string, now: number) => ({
  headers: { authorization: `Bearer ${token}` },
  body: Buffer.from('{}'),
  query: new URLSearchParams(),
  now,
});

describe('a bearer JWT checked once per token', () => {
  let server: KeyServer | undefined;
  afterEach(async () => server?.close());

  it('passes a token seen before without its signature checked again, and refuses it once it expired', async () => {
    server = await startKeyServer();
    const keys = remoteKeys(server.jwksUrl);
    const now = Date.now();
    const token = await server.sign({}, { ...rule, now, ttlS: 600 });
    const first = await verifyBearer(channel, delivery(token, now), keys, rule);
    // the same claims, not a second verification
    expect(await verifyBearer(channel, delivery(token, now + 1000), keys, rule)).toBe(first);
    // past exp and its 5 min of skew
    await expect(verifyBearer(channel, delivery(token, now + 600_000 + 301_000), keys, rule)).rejects.toBeInstanceOf(
      StaleTimestampError,
    );
  });

  it('never passes a token for another audience because one for this audience passed', async () => {
    server = await startKeyServer();
    const keys = remoteKeys(server.jwksUrl);
    const now = Date.now();
    const good = await server.sign({}, { ...rule, now });
    await verifyBearer(channel, delivery(good, now), keys, rule);
    const other = await server.sign({}, { ...rule, audience: 'someone-else', now });
    await expect(verifyBearer(channel, delivery(other, now), keys, rule)).rejects.toBeInstanceOf(SignatureError);
  });
});
