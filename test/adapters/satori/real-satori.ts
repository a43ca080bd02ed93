import { Bot, Context, h } from '@satorijs/satori';
import { Router } from '@satorijs/router';
import * as satoriServer from '@satorijs/server';
import type { IncomingHttpHeaders } from 'node:http';
import { freePort } from '../../support/net.js';

/** A message the bot was asked to send through the server's API. */
export interface Sent {
  channelId: string;
  content: string;
}

/**
 * The Satori reference server from npm (`@satorijs/server`, the API and event socket Koishi
 * served before its server plugin moved into Koishi's own packages) on `@satorijs/router`, with
 * one bot of our own built on `@satorijs/core`'s `Bot` (platform `onebot`, user `10001`), as an
 * adapter plugin gives one. `receive` makes the bot report an event, as a platform would, and
 * the server broadcasts it on its event socket; `message.create` reaches `createMessage`.
 */
export async function realSatori(token: string) {
  const sent: Sent[] = [];
  const headers: IncomingHttpHeaders[] = [];
  const port = await freePort();
  const ctx = new Context({}) as any;
  // Its router says when it listens and closes: errors only in the test output.
  ctx.logger('router').level = 1;
  ctx.provide('router', undefined, true);
  ctx.router = new Router(ctx, { host: '127.0.0.1', port });
  // @satorijs/server 2.2.2 registers `GET <path>/v1(/.+)*` (its 405 for GETs), a pattern
  // path-to-regexp 6 (under @koa/router 10, which @satorijs/router 1.1.2 takes) refuses; the
  // same route in a form it takes. Nothing else of the server is touched.
  const get = ctx.router.get;
  ctx.router.get = function (path: unknown, ...rest: unknown[]) {
    return get.call(this, typeof path === 'string' ? path.replace('/v1(/.+)*', '/v1/(.*)') : path, ...rest);
  };
  ctx.router.use(async (koa: { headers: IncomingHttpHeaders }, next: () => Promise<void>) => {
    headers.push(koa.headers);
    await next();
  });
  ctx.plugin(satoriServer, { path: '/satori', token, webhooks: [] });

  class TestBot extends Bot {
    constructor(context: Context) {
      super(context, {}, 'onebot');
      this.selfId = '10001';
      this.user = { id: '10001', name: 'bot' };
    }

    override async createMessage(channelId: string, content: h.Fragment) {
      sent.push({ channelId, content: h.normalize(content).join('') });
      return [{ id: `sent-${sent.length}`, content: String(content) }];
    }
  }
  let bot: TestBot | undefined;
  ctx.plugin({
    name: 'test-bot',
    apply(context: Context) {
      bot = new TestBot(context);
    },
  });
  await ctx.start();
  bot!.online();
  return {
    url: `http://127.0.0.1:${port}/satori`,
    sent,
    headers,
    /** The bot reports an event (Koishi's internal `message` is `message-created` on the wire). */
    receive(event: Record<string, unknown>): void {
      bot!.dispatch(bot!.session({ timestamp: Date.now(), ...event } as any));
    },
    async close() {
      await ctx.stop();
    },
  };
}
