// Feishu / Lark event subscription with an Encrypt Key: the body is {"encrypt"} (AES-256-CBC,
// key SHA-256(encryptKey), a random IV in front) and X-Lark-Signature signs timestamp, nonce,
// key and the raw body; inside, an im.message.receive_v1 text message whose content is a JSON string.
import { createCipheriv, createHash, randomBytes } from 'node:crypto';

const TOKEN = 'bench-feishu-verification-token';
const KEY = 'bench-feishu-encrypt-key-0123456789';
const AES = createHash('sha256').update(KEY).digest();

export const name = 'feishu (encrypted + signed)';
export const channel = {
  id: 'feishu',
  adapter: 'feishu',
  verificationToken: TOKEN,
  encryptKey: KEY,
  appId: 'cli_bench0001',
};

export function delivery(i) {
  const now = Date.now();
  const event = {
    schema: '2.0',
    header: {
      event_id: `ev-bench-${i}`,
      event_type: 'im.message.receive_v1',
      create_time: String(now),
      token: TOKEN,
      app_id: 'cli_bench0001',
      tenant_key: 'tk-bench',
    },
    event: {
      sender: {
        sender_id: { union_id: 'on_bench', user_id: 'u_bench', open_id: `ou_bench${i % 1000}` },
        sender_type: 'user',
        tenant_key: 'tk-bench',
      },
      message: {
        message_id: `om_bench${i}`,
        create_time: String(now),
        chat_id: `oc_bench${i % 1000}`,
        chat_type: 'p2p',
        message_type: 'text',
        content: JSON.stringify({ text: `帮我查一下订单 ORD-${i}` }),
      },
    },
  };
  const iv = randomBytes(16);
  const cipher = createCipheriv('aes-256-cbc', AES, iv);
  const body = Buffer.from(
    JSON.stringify({
      encrypt: Buffer.concat([iv, cipher.update(JSON.stringify(event), 'utf8'), cipher.final()]).toString('base64'),
    }),
  );
  const timestamp = String(Math.floor(now / 1000));
  const nonce = `n${i}`;
  const signature = createHash('sha256')
    .update(timestamp + nonce + KEY)
    .update(body)
    .digest('hex');
  return {
    headers: {
      'content-type': 'application/json',
      'x-lark-request-timestamp': timestamp,
      'x-lark-request-nonce': nonce,
      'x-lark-signature': signature,
    },
    body,
  };
}
