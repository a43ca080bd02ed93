// An agent worker as a separate process, on the built client (`agent-intake/client`, the
// package's own export): takes claims from INTAKE_URL with INTAKE_TOKEN and, per output it
// acked, appends `<sessionKey> <seq> <outputId> <attempt> <claimedAt> <ackingAt>` to OUT
// (claimedAt when the claim was handed out, ackingAt when the ack was sent: the span the
// worker held the session). With CRASH_AFTER=n it prints the n-th claim it took as JSON and
// kills itself with SIGKILL, without acking it (a worker that dies mid-claim).
import { appendFileSync, writeSync } from 'node:fs';
import { claims, isClientError } from 'agent-intake/client';

const { INTAKE_URL, INTAKE_TOKEN, OUT, CRASH_AFTER, MAX } = process.env;
const stop = new AbortController();
process.on('SIGTERM', () => stop.abort());

let taken = 0;
for await (const claim of claims({
  url: INTAKE_URL,
  token: INTAKE_TOKEN,
  max: Number(MAX ?? 1),
  waitMs: 1000,
  signal: stop.signal,
})) {
  const claimedAt = Date.now();
  taken += 1;
  if (CRASH_AFTER && taken === Number(CRASH_AFTER)) {
    const { id, attempt, leaseUntil } = claim;
    // Written at once (fd 1): nothing buffered is left for SIGKILL to lose.
    writeSync(1, `${JSON.stringify({ id, outputId: claim.output.id, attempt, leaseUntil })}\n`);
    process.kill(process.pid, 'SIGKILL');
  }
  const ackingAt = Date.now();
  try {
    await claim.ack();
  } catch (error) {
    // A lease that ran out (a stall longer than leaseMs): the output went to another claim.
    if (isClientError(error) && error.code === 'claim_lost') continue;
    throw error;
  }
  const { sessionKey, seq, id } = claim.output;
  appendFileSync(OUT, `${sessionKey} ${seq} ${id} ${claim.attempt} ${claimedAt} ${ackingAt}\n`);
}
