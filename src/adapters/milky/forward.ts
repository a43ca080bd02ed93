import { request } from 'undici';
import type { MediaType } from '../../events/inbound.js';
import type { ForwardNode } from '../../events/reply.js';
import { own, type Json } from '../kit/shape.js';
import { contentOf, segmentsOf, str } from './message.js';

/** The most nodes read of one answer: one past the largest `forwards.maxNodes` (config/schema.ts), as for OneBot. */
const MAX_NODES = 1001;
/** The most bytes of one answer read. */
const MAX_BYTES = 4 * 1024 * 1024;

const objectOf = (value: unknown): Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : {};

const mediaTypes: Partial<Record<string, MediaType>> = {
  image: 'image',
  record: 'audio',
  video: 'video',
  file: 'document',
};

/**
 * The messages of a merged forward: `POST <url>/api/get_forwarded_messages {forward_id}` answers
 * `{status: "ok", data: {messages: [{sender_name, avatar_url, time, segments}]}}` (SaltifyDev/milky,
 * api/message); a forward inside one is a `forward` segment naming its own id, read in turn.
 * Throws with the server's words when it refuses.
 */
export async function readMilkyForward(
  api: { url: string; headers: Readonly<Record<string, string>> },
  id: string,
  signal: AbortSignal,
): Promise<ForwardNode[]> {
  const response = await request(`${api.url}/get_forwarded_messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...api.headers },
    body: JSON.stringify({ forward_id: id }),
    signal,
  });
  // Read up to the bound, then stop: a server answering without end must not fill this process.
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of response.body as AsyncIterable<Buffer>) {
    bytes += chunk.length;
    if (bytes > MAX_BYTES) {
      response.body.destroy();
      throw new Error(`the Milky server's answer to get_forwarded_messages is over ${MAX_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  if (response.statusCode !== 200) throw new Error(`the Milky server answered HTTP ${response.statusCode}`);
  return forwardNodesOf(JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown);
}

/** The nodes of an answer to `get_forwarded_messages`; throws when the answer is a refusal. */
export function forwardNodesOf(answer: unknown): ForwardNode[] {
  const body = objectOf(answer);
  if (own(body, 'status') !== 'ok') {
    const words = str(own(body, 'message')) ?? `retcode ${str(own(body, 'retcode')) ?? '?'}`;
    throw new Error(`the Milky server refused get_forwarded_messages: ${words.slice(0, 200)}`);
  }
  const messages = own(objectOf(own(body, 'data')), 'messages');
  if (!Array.isArray(messages))
    throw new Error('the Milky server answered get_forwarded_messages without data.messages');
  return messages.slice(0, MAX_NODES).map((value) => {
    const message = objectOf(value);
    const raw = own(message, 'segments');
    const segments = segmentsOf(Array.isArray(raw) ? raw : []);
    const name = str(own(message, 'sender_name'));
    const time = Number(own(message, 'time'));
    const media: ForwardNode['media'] = [];
    for (const segment of segments) {
      const type = mediaTypes[segment.type];
      const ref = segment.data.url ?? segment.data.file ?? segment.data.file_id;
      if (type && ref) media.push({ type, ref });
    }
    const nested = segments.find((segment) => segment.type === 'other' && segment.data.type === 'forward')?.data.id;
    return {
      // Milky names a forwarded message's author by name only.
      sender: name ? { id: '', name } : { id: '' },
      content: contentOf(segments),
      timestamp: Number.isFinite(time) && time >= 0 ? Math.floor(time) : 0,
      media,
      ...(nested ? { nested: { id: nested } } : {}),
    };
  });
}
