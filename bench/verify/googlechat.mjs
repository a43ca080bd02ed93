// Google Chat: a MESSAGE event with Chat's bearer JWT (RS256, keys fetched once and cached).
import { readFileSync } from 'node:fs';
import { keyServer } from '../jwt-keys.mjs';

const AUDIENCE = '123456789012';
const keys = await keyServer();
const token = await keys.sign({}, 'chat@system.gserviceaccount.com', AUDIENCE);
const sample = JSON.parse(readFileSync(new URL('../../test/fixtures/googlechat/message-space.json', import.meta.url)));

export const name = 'Google Chat (JWT)';
export const channel = { id: 'googlechat', adapter: 'googlechat', audience: AUDIENCE, jwksUrl: keys.jwksUrl };
export function delivery(i) {
  const body = { ...sample, message: { ...sample.message, name: `${sample.message.name}-${i}` } };
  return { headers: { authorization: `Bearer ${token}` }, body: Buffer.from(JSON.stringify(body)) };
}
