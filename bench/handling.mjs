// Preloaded into a server by bench/latency.mjs with BENCH_HANDLING=1 (`node --import`): how long
// the server itself took over each request, from Node's `request` event (headers parsed) to
// the response's `finish` (handed to the kernel). Time a request waited before that (in the
// socket, for the event loop or for a core) is not in it: the difference to what the client
// saw is that wait. Asked over the IPC channel: 'handling:reset' clears, 'handling:read'
// answers { handling: { count, p50, p99, p999 } } in ms.
import http from 'node:http';
import { performance } from 'node:perf_hooks';

let times = [];
const emit = http.Server.prototype.emit;
http.Server.prototype.emit = function (event, req, res) {
  if (event === 'request') {
    const startedAt = performance.now();
    res.once('finish', () => times.push(performance.now() - startedAt));
  }
  return emit.apply(this, arguments);
};

process.on('message', (message) => {
  if (message === 'handling:reset') times = [];
  else if (message === 'handling:read') {
    const sorted = times.sort((a, b) => a - b);
    const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
    process.send?.({ handling: { count: sorted.length, p50: at(0.5), p99: at(0.99), p999: at(0.999) } });
  }
});
