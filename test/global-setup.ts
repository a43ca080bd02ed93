import { execSync } from 'node:child_process';

/** Child-process tests run the built service (`dist/main.js`); build it when missing or older than the sources. */
export default function setup(): void {
  // The same build as `npm run build` (code and the Redis store's Lua), when missing or stale.
  execSync('node scripts/ensure-build.mjs', { stdio: 'inherit' });
}
