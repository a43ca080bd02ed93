import type { ForwardNode } from '../../events/reply.js';
import { contentOf, mediaOf, segmentsOf, str } from './message.js';

type Json = Record<string, unknown>;

/**
 * The most nodes and the deepest inline nesting read of one answer: one node past the largest
 * `forwards.maxNodes` (so the reader still sees there were more) and the largest
 * `forwards.maxDepth` (config/schema.ts). The answer comes from a bot relaying what any group
 * member forwarded: 100,000 nodes or a forward nested 2,000 deep inline is read this far only.
 */
const MAX_NODES = 1001;
const MAX_DEPTH = 10;

const objectOf = (value: unknown): Json | undefined =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : undefined;

/**
 * The nodes of a merged forward in the answer to `get_forward_msg`: `{status: "ok", data:
 * {messages: [...]}}` (github.com/botuniverse/onebot-11 api/public.md#get_forward_msg). A node
 * is a message (`sender`, `time`, `message` or `content`), or a `node` segment holding one
 * (`{type: "node", data: {user_id, nickname, content}}`, go-cqhttp and Lagrange). A forward
 * nested in a node is a `forward` segment: NapCat inlines its messages (`data.content`), the
 * others give only its id, read with another `get_forward_msg`.
 */
export function forwardNodes(answer: unknown): ForwardNode[] {
  const body = objectOf(answer);
  if (!body || body.status !== 'ok' || (body.retcode !== undefined && body.retcode !== 0)) {
    const why = str(body?.message) ?? str(body?.wording) ?? '';
    throw new Error(
      `get_forward_msg answered retcode ${str(body?.retcode) ?? '?'}${why ? `: ${why.slice(0, 200)}` : ''}`,
    );
  }
  const data = objectOf(body.data);
  const messages = Array.isArray(data) ? data : (data?.messages ?? data?.message);
  if (!Array.isArray(messages)) throw new Error('get_forward_msg answered without data.messages');
  return nodesOf(messages, 1, { left: MAX_NODES });
}

function nodesOf(messages: readonly unknown[], depth: number, budget: { left: number }): ForwardNode[] {
  const nodes: ForwardNode[] = [];
  for (const item of messages) {
    const outer = objectOf(item);
    if (!outer) continue;
    if (budget.left-- <= 0) break;
    const node = outer.type === 'node' ? (objectOf(outer.data) ?? {}) : outer;
    const sender = objectOf(node.sender) ?? {};
    const id = str(sender.user_id) ?? str(node.user_id) ?? str(node.uin) ?? '';
    const name = str(sender.card) || str(sender.nickname) || str(node.nickname) || str(node.name);
    const raw = node.message ?? node.content;
    // A nested forward's inline messages are read below, not kept as text of its segment.
    const segments = segmentsOf(Array.isArray(raw) ? raw.map(withoutInline) : raw);
    const time = Number(str(node.time));
    const made: ForwardNode = {
      sender: name ? { id, name } : { id },
      content: contentOf(segments),
      timestamp: Number.isSafeInteger(time) && time >= 0 ? time : 0,
      media: mediaOf(segments).map((media) => ({ type: media.type ?? 'document', ref: media.url ?? media.ref ?? '' })),
    };
    const nested = Array.isArray(raw) ? raw.map(objectOf).find((segment) => segment?.type === 'forward') : undefined;
    if (nested) {
      const inner = objectOf(nested.data) ?? {};
      const nestedId = str(inner.id);
      made.nested = {
        ...(nestedId ? { id: nestedId } : {}),
        ...(Array.isArray(inner.content) && depth < MAX_DEPTH
          ? { nodes: nodesOf(inner.content, depth + 1, budget) }
          : {}),
      };
    } else if (typeof raw === 'string') {
      const id = segments.find((segment) => segment.type === 'other' && segment.data.type === 'forward')?.data.id;
      if (id) made.nested = { id };
    }
    nodes.push(made);
  }
  return nodes;
}

/** A `forward` segment without its inline `content`: a segment's object data is otherwise kept as JSON text. */
function withoutInline(segment: unknown): unknown {
  const object = objectOf(segment);
  const data = objectOf(object?.data);
  if (object?.type !== 'forward' || !data || !('content' in data)) return segment;
  const { content: _inline, ...rest } = data;
  return { ...object, data: rest };
}
