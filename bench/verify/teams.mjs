// Teams: a message activity with the Bot Framework's bearer JWT (keys from the OpenID metadata,
// fetched once and cached), its serviceUrl claim and the key's endorsements checked.
import { readFileSync } from 'node:fs';
import { keyServer } from '../jwt-keys.mjs';

const APP_ID = '00000000-0000-4000-8000-00000000b071';
const sample = JSON.parse(readFileSync(new URL('../../test/fixtures/teams/message-channel.json', import.meta.url)));
const keys = await keyServer({ endorsements: ['msteams'] });
const token = await keys.sign({ serviceUrl: sample.serviceUrl }, 'https://api.botframework.com', APP_ID);

export const name = 'Teams (JWT)';
export const channel = { id: 'teams', adapter: 'teams', appId: APP_ID, openIdMetadataUrl: keys.metadataUrl };
export function delivery(i) {
  const body = { ...sample, id: `${sample.id}${i}` };
  return { headers: { authorization: `Bearer ${token}` }, body: Buffer.from(JSON.stringify(body)) };
}
