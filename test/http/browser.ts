import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (installed by .ci/run); never a downloaded browser. */
const CHROMIUM = '/usr/bin/chromium';

/** Headless Debian chromium for the console's tests, with nothing of its own going to the network. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
}
