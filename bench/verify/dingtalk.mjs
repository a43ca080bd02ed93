// DingTalk enterprise robot, HTTP callback: `timestamp` (ms) and `sign`, base64 HMAC-SHA256 of
// timestamp + "\n" + AppSecret keyed by the AppSecret. DingTalk HTTP mode sends the body in
// plaintext (the optional aesKey body encryption is not supported by the adapter yet).
import { createHmac } from 'node:crypto';

const SECRET = 'bench-dingtalk-app-secret-0123456789abcdefghijklmnopqrstuvwxyzAB';
const ROBOT = 'dingbenchrobot0001';

export const name = 'dingtalk (timestamp sign)';
export const channel = { id: 'dingtalk', adapter: 'dingtalk', appSecret: SECRET, clientId: ROBOT };

export function delivery(i) {
  const now = Date.now();
  const body = Buffer.from(
    JSON.stringify({
      conversationId: 'cidpX8e6+vBsh0fGmNkCXYnqw==',
      chatbotCorpId: 'ding9f50b15bccd16741',
      chatbotUserId: '$:LWCP_v1:$Cxz2MWebbtC0AHCtyjWWiQ==',
      msgId: `msgBench${i}==`,
      senderNick: '张三',
      isAdmin: false,
      senderStaffId: '0149264213373',
      sessionWebhookExpiredTime: now + 5_400_000,
      createAt: now,
      senderCorpId: 'ding9f50b15bccd16741',
      conversationType: '1',
      senderId: '$:LWCP_v1:$Zw5jPuLiS2Tfrsq5/d7vYw==',
      sessionWebhook: 'https://oapi.dingtalk.com/robot/sendBySession?session=c5b4d5dbd7c6e0f0b8fa1a3b0c2a9e11',
      text: { content: `帮我查一下订单 ORD-${i}` },
      robotCode: ROBOT,
      msgtype: 'text',
    }),
  );
  const timestamp = String(now);
  const sign = createHmac('sha256', SECRET).update(`${timestamp}\n${SECRET}`).digest('base64');
  return { headers: { 'content-type': 'application/json', timestamp, sign }, body };
}
