import { RequestError } from '../../core/errors.js';
import type { ForwardNode } from '../../events/reply.js';
import { own, PayloadReader, type Json } from '../kit/shape.js';
import { feishuContent } from './message.js';

/**
 * The most children and the deepest nesting read of one answer: one past the largest
 * `forwards.maxNodes` (so the reader still sees there were more) and the largest
 * `forwards.maxDepth` (config/schema.ts), as for OneBot's get_forward_msg.
 */
const MAX_NODES = 1001;
const MAX_DEPTH = 10;

/**
 * The children of a merged forward in the answer to `GET /open-apis/im/v1/messages/{id}`:
 * `data.items[]` lists the forward itself and every message it carries, each child naming its
 * parent in `upper_message_id` (a merged forward nested in it lists its own children the same
 * way) with its `sender`, `create_time` (ms), `msg_type` and `body.content`, a JSON string as
 * in `im.message.receive_v1` (open.feishu.cn im-v1/message/get; im-v1/message/merge_forward).
 * A nested forward whose children the answer leaves out keeps its id, read with a GET of its own.
 */
export function feishuForwardNodes(data: unknown, id: string): ForwardNode[] {
  const read = new PayloadReader(
    (problem) => new RequestError('bad_shape', 502, `Feishu's answer for message ${id}: ${problem}`),
  );
  const items = read.array(own(read.object(data, 'data'), 'items'), 'data.items');
  const children = new Map<string, Json[]>();
  items.forEach((value, i) => {
    const item = read.object(value, `data.items[${i}]`);
    const upper = read.optText(own(item, 'upper_message_id'), `data.items[${i}].upper_message_id`);
    if (upper === undefined) return;
    const siblings = children.get(upper);
    if (siblings) siblings.push(item);
    else children.set(upper, [item]);
  });
  const budget = { left: MAX_NODES };
  // The answer comes from what any chat member forwarded: a child naming its own ancestor is read once.
  const seen = new Set<string>([id]);

  const nodesOf = (parent: string, depth: number): ForwardNode[] => {
    const nodes: ForwardNode[] = [];
    for (const item of children.get(parent) ?? []) {
      if (budget.left-- <= 0) break;
      const messageId = read.optText(own(item, 'message_id'), 'data.items[].message_id') ?? '';
      if (messageId && seen.has(messageId)) continue;
      if (messageId) seen.add(messageId);
      const type = read.optText(own(item, 'msg_type'), 'data.items[].msg_type') ?? 'unknown';
      const node = nodeOf(read, item, type, messageId);
      if (type === 'merge_forward' && messageId) {
        const inline = children.has(messageId) && depth < MAX_DEPTH;
        node.nested = inline ? { id: messageId, nodes: nodesOf(messageId, depth + 1) } : { id: messageId };
      }
      nodes.push(node);
    }
    return nodes;
  };
  return nodesOf(id, 1);
}

/** One child as a node: its sender's open_id, its content read as an event's would be, its time in seconds. */
function nodeOf(read: PayloadReader, item: Json, type: string, messageId: string): ForwardNode {
  const sender = read.optObject(own(item, 'sender'), 'data.items[].sender') ?? {};
  const body = read.optObject(own(item, 'body'), 'data.items[].body') ?? {};
  const created = Number(read.optText(own(item, 'create_time'), 'data.items[].create_time'));
  let text: string;
  let media: ForwardNode['media'] = [];
  try {
    // The API names a mention's open_id in `id` where the event nests it under `id.open_id`.
    const mentions = read.optArray(own(item, 'mentions'), 'data.items[].mentions').map((value) => {
      const mention = read.object(value, 'data.items[].mentions[]');
      return { key: own(mention, 'key'), name: own(mention, 'name'), id: { open_id: own(mention, 'id') } };
    });
    const content = feishuContent(read, { content: own(body, 'content'), mentions }, type, messageId, JSON.parse);
    text = content.text;
    media = content.media.map((item) => ({ type: item.type ?? 'document', ref: item.ref ?? item.url ?? '' }));
  } catch {
    // One child Feishu gives without readable content (a card, a deleted message) is kept as its type.
    text = `[${type.slice(0, 32)}]`;
  }
  return {
    sender: { id: read.optText(own(sender, 'id'), 'data.items[].sender.id') ?? '' },
    content: text,
    timestamp: Number.isSafeInteger(created) && created >= 0 ? Math.floor(created / 1000) : 0,
    media,
  };
}
