// `npm run bench`: every benchmark, each against its baseline in the same run.
import { spawnSync } from 'node:child_process';

const node = process.execPath;
const runs = [
  [node, ['--expose-gc', 'bench/dedup.mjs']],
  [node, ['--expose-gc', 'bench/correlator.mjs']],
  [node, ['--expose-gc', 'bench/media.mjs']],
  [node, ['bench/pipeline.mjs']],
  [node, ['bench/ingest.mjs', process.env.BENCH_SECONDS ?? '8', '50', process.env.BENCH_ROUNDS ?? '5']],
  [node, ['bench/ingest-cost.mjs', '1500', process.env.BENCH_SECONDS ?? '8', '3']],
  [node, ['bench/redis.mjs', process.env.BENCH_SECONDS ?? '8', '3', '1000', '50']],
];
for (const [cmd, args] of runs) {
  const result = spawnSync(cmd, args, { stdio: 'inherit' });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
