// `npm run bench`: every benchmark, each against its baseline in the same run. Durations are kept
// short so the whole run takes about sixteen minutes (idle CPU waits 150 s for start-up to settle); BENCH_SECONDS / BENCH_ROUNDS lengthen the ingest runs.
import { spawnSync } from 'node:child_process';

const node = process.execPath;
const runs = [
  [node, ['--expose-gc', 'bench/dedup.mjs']],
  [node, ['--expose-gc', 'bench/correlator.mjs']],
  [node, ['--expose-gc', 'bench/media.mjs']],
  [node, ['--expose-gc', 'bench/claim-windows.mjs', '100000']],
  [node, ['bench/verify.mjs', '20000', '5']],
  [node, ['bench/wx-xml.mjs', '50000', '7']],
  [node, ['bench/pipeline.mjs', '8000', '4', '2']],
  [node, ['bench/turns.mjs', '4000', '4', '2']],
  [node, ['bench/claims.mjs', '4000', '200', '3']],
  [node, ['bench/pipeline.mjs', '2000', '4', '2'], { BENCH_ACTIVATION: '1' }],
  [node, ['bench/activation.mjs', '1000']],
  [node, ['bench/ingest.mjs', process.env.BENCH_SECONDS ?? '3', '50', process.env.BENCH_ROUNDS ?? '4']],
  [node, ['bench/ingest-cost.mjs', '500', process.env.BENCH_SECONDS ?? '5', '3']],
  [node, ['bench/latency.mjs', '4', '2', '10']],
  [node, ['bench/gc.mjs', '2000', '5', '1']],
  [node, ['bench/young-gen.mjs', '4000', '5', '1']],
  [node, ['bench/restart.mjs', '100000']],
  [node, ['bench/where.mjs', '5', '50']],
  [node, ['bench/sockets.mjs', process.env.BENCH_SECONDS ?? '3', '3']],
  [node, ['bench/redis.mjs', process.env.BENCH_SECONDS ?? '4', '3', '800', '50']],
];
for (const [cmd, args, env] of runs) {
  const result = spawnSync(cmd, args, { stdio: 'inherit', env: { ...process.env, ...env } });
  if (result.status !== 0) process.exit(result.status ?? 1);
}
