// The webhook traffic of the load benches: what each request carries, where it is posted, and
// the channel configuration agent-intake needs for it.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * The webhook traffic of the load benches: `generic` (the default), each request a generic
 * channel's message of a new session, or `telegram` (BENCH_TRAFFIC=telegram), each request a
 * Telegram `Update` with a new update_id from a new private chat, posted to a Telegram channel
 * with its secret-token header (core.telegram.org/bots/api#setwebhook). The baselines parse the
 * same bytes.
 */
export const traffic = process.env.BENCH_TRAFFIC ?? 'generic';
if (traffic !== 'generic' && traffic !== 'telegram')
  throw new Error(`BENCH_TRAFFIC=${traffic}: expected generic or telegram`);

/** The Telegram channel every started agent-intake has beside the generic one, and its secret token. */
export const TELEGRAM = { id: 'tg', secretToken: 'bench-secret-token' };
const configDir = traffic === 'telegram' ? mkdtempSync(join(tmpdir(), 'intake-bench-config-')) : undefined;
export const intakeEnv = {};
if (configDir) {
  const file = join(configDir, 'intake.json');
  writeFileSync(
    file,
    JSON.stringify({
      channels: [
        { id: 'generic', adapter: 'generic' },
        { id: TELEGRAM.id, adapter: 'telegram', secretToken: TELEGRAM.secretToken },
      ],
    }),
  );
  intakeEnv.INTAKE_CONFIG = file;
  process.on('exit', () => rmSync(configDir, { recursive: true, force: true }));
}

/** The body of message `n`: a new message of a new session. */
export function newSessionBody(tag, n) {
  return JSON.stringify({
    id: `bench-${tag}-${n}`,
    sessionKey: `bench:user-${n}`,
    sender: { id: `u${n}`, name: 'Bench' },
    content: `帮我查一下订单 ORD-${n} 的状态`,
    timestamp: 1710234567,
  });
}

/** An autocannon request whose body is a new message of a new session every time. */
export function newSessionRequests(tag) {
  let n = 0;
  return [
    {
      setupRequest(request) {
        request.body = newSessionBody(tag, ++n);
        return request;
      },
    },
  ];
}

/**
 * Update ids and chat ids of the Telegram traffic: one counter for the whole run, so no update
 * repeats on a server that stays up across slices, whatever the tag.
 */
let telegramUpdates = 0;

/** The body of a Telegram `Update`: a text message from a new private chat, under a new update_id. */
export function telegramUpdateBody() {
  const n = ++telegramUpdates;
  const user = { id: 100_000_000 + n, is_bot: false, first_name: 'Bench', language_code: 'en' };
  return JSON.stringify({
    update_id: 500_000_000 + n,
    message: {
      message_id: 1,
      from: user,
      chat: { id: user.id, first_name: 'Bench', type: 'private' },
      date: 1710234567,
      text: `帮我查一下订单 ORD-${n} 的状态`,
    },
  });
}

/**
 * autocannon's options for `url`'s webhooks under the chosen traffic (`traffic`): path,
 * headers, and a request whose body is a new message of a new session every time.
 */
export function trafficLoad(url, tag) {
  if (traffic === 'telegram') {
    return {
      url: `${url}/webhooks/${TELEGRAM.id}`,
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-telegram-bot-api-secret-token': TELEGRAM.secretToken },
      requests: [
        {
          setupRequest(request) {
            request.body = telegramUpdateBody();
            return request;
          },
        },
      ],
    };
  }
  return {
    url: `${url}/webhooks/generic`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    requests: newSessionRequests(tag),
  };
}
