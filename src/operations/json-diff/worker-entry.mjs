// The json-diff worker's entry point. A worker thread does not inherit the tsx loader of the main
// thread, so this plain module registers tsx itself, then loads the TypeScript worker (as
// openapi-audit's worker does).
// Sources only: built JavaScript (dist/) starts the compiled worker itself (workerModule, worker-pool.ts).
import { register } from "tsx/esm/api";

register();
await import("./worker.ts");
