// Opens COUNT idle TCP connections from LOCAL_ADDRESS to HOST:PORT (at most PENDING connecting at
// once) and never sends a byte on them; each is held until the server closes it. Prints one JSON
// line when every connection has been opened (or failed to), then one when all of them are closed
// (or on SIGTERM), and exits. Its own process, so the attacker's descriptors are not the test's.
//   node connection-cap-attacker.mjs HOST PORT LOCAL_ADDRESS COUNT [PENDING]
import net from "node:net";

const [host, port, localAddress, count, pendingArg] = process.argv.slice(2);
const total = Number(count);
const maxPending = Number(pendingArg ?? 256);
const stats = {
  opened: 0,
  failed: 0,
  closed: 0,
  open: 0,
  peakOpen: 0,
  answers: {},
  errors: {},
};
let started = 0;
let pending = 0;
const sockets = new Set();

const report = (phase) => process.stdout.write(`${JSON.stringify({ phase, ...stats })}\n`);

function openOne() {
  started++;
  pending++;
  const socket = net.connect({ host, port: Number(port), localAddress });
  sockets.add(socket);
  let connected = false;
  let first = "";
  socket.on("connect", () => {
    connected = true;
    pending--;
    stats.opened++;
    stats.open++;
    stats.peakOpen = Math.max(stats.peakOpen, stats.open);
    pump();
  });
  socket.on("data", (chunk) => {
    if (first.length < 200) first += chunk.toString("latin1");
  });
  socket.on("error", (error) => {
    stats.errors[error.code ?? error.message] = (stats.errors[error.code ?? error.message] ?? 0) + 1;
  });
  socket.on("close", () => {
    sockets.delete(socket);
    socket.destroy();
    if (connected) {
      stats.open--;
      stats.closed++;
      // "HTTP/1.1 503 ...problem:too-many-connections" or "HTTP/1.1 408 Request Timeout", or nothing.
      const status = first.slice(9, 12) || "none";
      const type = /urn:utility402:problem:([a-z-]+)/.exec(first)?.[1];
      const key = type ? `${status} ${type}` : status;
      stats.answers[key] = (stats.answers[key] ?? 0) + 1;
    } else {
      pending--;
      stats.failed++;
      pump();
    }
    if (started === total && pending === 0 && sockets.size === 0) finish("closed");
  });
}

function pump() {
  while (started < total && pending < maxPending) openOne();
  if (started === total && pending === 0 && !reportedOpened) {
    reportedOpened = true;
    report("opened");
  }
}
let reportedOpened = false;
let finished = false;
function finish(phase) {
  if (finished) return;
  finished = true;
  if (!reportedOpened) report("opened");
  report(phase);
  for (const socket of sockets) socket.destroy();
  process.exit(0);
}
process.on("SIGTERM", () => finish("stopped"));
pump();
