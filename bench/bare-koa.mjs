// Baseline for the ingest benchmark: bare Koa + @koa/router reading and parsing the same JSON
// (a generic message, or a Telegram Update: its update_id is the id).
import Koa from 'koa';
import Router from '@koa/router';

const app = new Koa();
const router = new Router();
router.post('/webhooks/:channel', async (ctx) => {
  const chunks = [];
  for await (const chunk of ctx.req) chunks.push(chunk);
  const body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
  ctx.body = { accepted: 1, duplicates: 0, events: [{ id: body.id ?? body.update_id, verdict: 'accepted' }] };
});
app.use(router.routes());
app.listen(Number(process.env.PORT), '127.0.0.1', () => process.send?.('ready'));
