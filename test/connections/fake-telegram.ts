import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export const TOKEN = '123456:ABC-test-token';

/**
 * A Bot API server on 127.0.0.1 serving getUpdates as Telegram does: the updates with
 * update_id >= offset, at once when there are any, else after the poll's timeout (here the
 * test's short one). `conflict` answers 409 as Telegram does while a webhook is set; `stall`
 * leaves polls unanswered; `stale(...)` makes the next answer carry those updates whatever its
 * offset (a server answering from behind).
 */
export async function fakeTelegram() {
  const updates: Array<Record<string, unknown>> = [];
  const offsets: Array<string | null> = [];
  const state = { conflict: false, failWith: [] as number[], stall: false };
  const queries: URLSearchParams[] = [];
  let waiting: Array<() => void> = [];
  const behind: Array<Record<string, unknown>> = [];
  const server: Server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    if (url.pathname !== `/bot${TOKEN}/getUpdates`) {
      res.statusCode = 404;
      res.end(JSON.stringify({ ok: false, error_code: 404, description: 'Not Found' }));
      return;
    }
    offsets.push(url.searchParams.get('offset'));
    queries.push(url.searchParams);
    if (state.stall) return; // a half-open connection: never answered
    const failure = state.failWith.shift();
    if (failure === 429) {
      res.statusCode = 429;
      res.end(
        JSON.stringify({
          ok: false,
          error_code: 429,
          description: 'Too Many Requests: retry after 7',
          parameters: { retry_after: 7 },
        }),
      );
      return;
    }
    if (failure !== undefined) {
      res.statusCode = failure;
      res.end('<html>Bad Gateway</html>');
      return;
    }
    if (state.conflict) {
      res.statusCode = 409;
      res.end(
        JSON.stringify({
          ok: false,
          error_code: 409,
          description:
            "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
        }),
      );
      return;
    }
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const answer = () =>
      res.end(
        JSON.stringify({
          ok: true,
          result: [...behind.splice(0), ...updates.filter((u) => (u.update_id as number) >= offset)],
        }),
      );
    if (behind.length > 0 || updates.some((u) => (u.update_id as number) >= offset)) return answer();
    const timer = setTimeout(
      () => {
        waiting = waiting.filter((w) => w !== wake);
        answer();
      },
      Number(url.searchParams.get('timeout') ?? 0) * 1000,
    );
    const wake = () => {
      clearTimeout(timer);
      answer();
    };
    waiting.push(wake);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    offsets,
    state,
    queries,
    push(...more: Array<Record<string, unknown>>) {
      updates.push(...more);
      for (const wake of waiting.splice(0)) wake();
    },
    /** The next answer carries these updates too, whatever offset it was asked from. */
    stale(...old: Array<Record<string, unknown>>) {
      behind.push(...old);
      for (const wake of waiting.splice(0)) wake();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const wake of waiting.splice(0)) wake();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export const update = (id: number, text: string, chat = 42) => ({
  update_id: id,
  message: {
    message_id: id,
    date: 1718000000,
    chat: { id: chat, type: 'private' },
    from: { id: chat, is_bot: false, first_name: 'Ana' },
    text,
  },
});
