import { execSync } from 'node:child_process';
import { existsSync } from 'node:fs';

/** Child-process tests run the built service (`dist/main.js`); build it when missing. */
export default function setup(): void {
  if (!existsSync('dist/main.js')) execSync('npx tsc -p tsconfig.build.json', { stdio: 'inherit' });
}
