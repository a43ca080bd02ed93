// A module of a build's dist/, by its path in this layout or the one before it (src/ had its
// composition and kernel at the root until the service/ and core/ tiers), so a bench can run a
// previous commit's build beside this one (BENCH_COMPARE).
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const EARLIER = new Map([
  ['service/intake.js', 'intake.js'],
  ['service/configure.js', 'configure.js'],
  ['service/channels.js', 'channels.js'],
]);

/** The path of `module` in `dist`, in this layout or the earlier one. */
export function distPath(dist, module) {
  const here = join(dist, module);
  if (existsSync(here)) return here;
  const before = EARLIER.get(module);
  if (before && existsSync(join(dist, before))) return join(dist, before);
  throw new Error(`no ${module} in ${dist}: build it first (npm run build)`);
}

/** Import `module` from `dist`, in this layout or the earlier one. */
export function fromDist(dist, module) {
  return import(distPath(dist, module));
}
