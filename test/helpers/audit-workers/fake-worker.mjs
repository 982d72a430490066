// A stand-in audit worker for the pool's tests: it speaks the pool's protocol and misbehaves on
// request (the contract's "x-test" field), so time limits, crashes and memory limits are exact.
import { parentPort } from "node:worker_threads";

const result = (openapi) => ({
  openapiVersion: openapi,
  valid: true,
  summary: { errors: 0, warnings: 0, info: 0 },
  findings: [],
  truncated: false,
});

parentPort.on("message", ({ id, task: job }) => {
  const mode = job.document["x-test"];
  if (mode === "spin") for (;;);
  if (mode === "crash") throw new Error("the worker crashed");
  if (mode === "exit") process.exit(3);
  if (mode === "oom") {
    const hog = [];
    for (;;) hog.push(Array.from({ length: 100_000 }, (_, i) => ({ i })));
  }
  if (mode === "fail") {
    parentPort.postMessage({ type: "failed", id, message: "the lint threw" });
    return;
  }
  const delay = Number(job.document["x-delay"] ?? 0);
  setTimeout(() => parentPort.postMessage({ type: "done", id, result: result(job.openapi) }), delay);
});
parentPort.postMessage({ type: "ready" });
