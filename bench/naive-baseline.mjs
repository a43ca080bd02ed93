// Baseline for the ingest benchmarks: the naive algorithm, as the design documents sketch it,
// on bare Koa + @koa/router, reading and parsing the same JSON:
// exact dedup in a Set with a setTimeout per id, fuzzy dedup in a Map scanned on every message
// (only for messages without an id, as the sketch says), a debounce buffer per session with a
// setTimeout re-armed on every message, a forced flush past 3 messages, text joined with spaces
// and emitted in-process. Volatile, unvalidated, unmetered: what the sketch does and nothing more.
import { createHash } from 'node:crypto';
import { EventEmitter } from 'node:events';
import Koa from 'koa';
import Router from '@koa/router';

const DEBOUNCE_WINDOW = 1500;
const MAX_MESSAGES = 3;
const seenMessageIds = new Set();
const recentHashes = new Map();
const debounceBuffers = new Map();
const output = new EventEmitter();
output.on('chat.processedMessage', () => {});

function isDuplicate(message) {
  if (message.id && seenMessageIds.has(message.id)) return true;
  if (message.id) {
    seenMessageIds.add(message.id);
    setTimeout(() => seenMessageIds.delete(message.id), 300_000);
  }
  return false;
}

function isFuzzyDuplicate(content, sessionKey) {
  const hash = createHash('md5').update(`${sessionKey}:${content}`).digest('hex');
  const now = Date.now();
  for (const [h, ts] of recentHashes.entries()) if (now - ts > 2000) recentHashes.delete(h);
  if (recentHashes.has(hash)) return true;
  recentHashes.set(hash, now);
  return false;
}

function flushBuffer(sessionKey) {
  const buf = debounceBuffers.get(sessionKey);
  if (!buf) return;
  clearTimeout(buf.timeoutId);
  debounceBuffers.delete(sessionKey);
  output.emit('chat.processedMessage', {
    type: 'chat.processedMessage',
    sessionKey,
    content: buf.messages.join(' '),
    messageIds: buf.ids,
    merged: buf.messages.length,
    timestamp: buf.lastActivity,
  });
}

function enqueueMessage(sessionKey, id, text) {
  let buf = debounceBuffers.get(sessionKey);
  if (!buf) {
    buf = { messages: [], ids: [], lastActivity: 0, timeoutId: null };
    debounceBuffers.set(sessionKey, buf);
  }
  buf.messages.push(text);
  buf.ids.push(id);
  buf.lastActivity = Date.now();
  if (buf.timeoutId) clearTimeout(buf.timeoutId);
  if (buf.messages.length >= MAX_MESSAGES) return flushBuffer(sessionKey);
  buf.timeoutId = setTimeout(() => flushBuffer(sessionKey), DEBOUNCE_WINDOW);
}

/** A generic message as it is; a Telegram Update as one: its update_id, its chat, its text. */
function messageOf(body) {
  if (body.update_id === undefined) return body;
  return { id: String(body.update_id), sessionKey: `tg:${body.message?.chat?.id}`, content: body.message?.text ?? '' };
}

const app = new Koa();
const router = new Router();
router.post('/webhooks/:channel', async (ctx) => {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const message = messageOf(JSON.parse(Buffer.concat(chunks).toString('utf8')));
  const duplicate = isDuplicate(message) || (!message.id && isFuzzyDuplicate(message.content, message.sessionKey));
  if (!duplicate) enqueueMessage(message.sessionKey, message.id, message.content);
  ctx.body = {
    accepted: duplicate ? 0 : 1,
    duplicates: duplicate ? 1 : 0,
    events: [{ id: message.id, verdict: duplicate ? 'duplicate' : 'accepted' }],
  };
});
app.use(router.routes());
app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
