import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll } from 'vitest';

/** Debian's chromium (installed by .ci/run); never a downloaded browser. */
const CHROMIUM = '/usr/bin/chromium';

/** Headless Debian chromium for the console's tests, with nothing of its own going to the network. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

/** Headless chromium for the tests of the calling file or `describe` block: launched before them, closed after them. */
export function useChromium(): { readonly browser: Browser } {
  let browser: Browser | undefined;
  beforeAll(async () => {
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    get browser(): Browser {
      if (!browser) throw new Error('chromium has not started: use it in a test or a hook');
      return browser;
    },
  };
}

/**
 * The console at `url` in a new 1280x900 page of `browser`, each wait on it bounded by `timeoutMs`:
 * its clock installed before it loads (its polls run on real time until `nextPoll` moves it on),
 * the dialogs it opens dismissed and kept in `dialogs`. `prepare` gets the context first (routes).
 */
export async function openConsole(
  browser: Browser,
  url: string,
  options: { timeoutMs: number; prepare?: (context: BrowserContext) => Promise<unknown> },
): Promise<{ page: Page; dialogs: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await options.prepare?.(context);
  const page = await context.newPage();
  page.setDefaultTimeout(options.timeoutMs);
  await page.clock.install();
  const dialogs: string[] = [];
  page.on('dialog', (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  await page.goto(url);
  return { page, dialogs };
}

/** How often the console polls /v1/stats and /v1/connections (STATS_EVERY_MS in console/app.js). */
export const POLL_MS = 3000;

/**
 * The console's next poll of `path` now, not up to 3 s from now: the page's clock (installed by
 * `page.clock.install()` before the page loaded) jumps to it; resolves with that poll's answer.
 * (Should a poll's request be under way, its own answer comes first and the next poll follows
 * in real time: a wait for what the page shows after this still sees the change.)
 */
export async function nextPoll(page: Page, path: '/v1/stats' | '/v1/connections'): Promise<void> {
  const answered = page.waitForResponse((response) => new URL(response.url()).pathname.endsWith(path));
  await page.clock.fastForward(POLL_MS);
  await answered;
}
