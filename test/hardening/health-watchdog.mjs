// Probes http://127.0.0.1:PORT/healthz on a new connection every EVERY_MS until its stdin closes, then
// prints one JSON line { latencies, failures } (latencies in ms of the answered probes, failures as
// statuses or error codes) and exits. Its own process: the attack's work in the test process (building
// 1 MB bodies, opening sockets) never delays a probe or its clock, so what it measures is the service.
//   node health-watchdog.mjs PORT EVERY_MS TIMEOUT_MS
import http from "node:http";

const [port, everyMs, timeoutMs] = process.argv.slice(2).map(Number);
const latencies = [];
const failures = [];
let running = true;

function probe() {
  return new Promise((resolve) => {
    const request = http.get({ host: "127.0.0.1", port, path: "/healthz", agent: false }, (response) => {
      response.resume();
      response.on("end", () => resolve(response.statusCode ?? 0));
      response.on("error", (error) => resolve(error.message));
    });
    // A deadline on the whole exchange, connecting included.
    const deadline = setTimeout(
      () => request.destroy(new Error(`no answer within ${timeoutMs} ms`)),
      timeoutMs,
    );
    request.on("close", () => clearTimeout(deadline));
    request.on("error", (error) => resolve(error.code ?? error.message));
  });
}

process.stdin.resume();
process.stdin.on("end", () => {
  running = false;
});
process.stdin.on("close", () => {
  running = false;
});

while (running) {
  const started = process.hrtime.bigint();
  const status = await probe();
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (status === 200) latencies.push(ms);
  else failures.push(String(status));
  if (running) await new Promise((resolve) => setTimeout(resolve, everyMs));
}
process.stdout.write(`${JSON.stringify({ latencies, failures })}\n`);
