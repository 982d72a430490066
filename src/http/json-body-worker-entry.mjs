// The large JSON body worker's entry point. A worker thread does not inherit the tsx loader of the
// main thread, so this plain module registers tsx itself, then loads the TypeScript worker.
// Sources only: built JavaScript (dist/) starts the compiled worker itself (workerModule, worker-pool.ts).
import { register } from "tsx/esm/api";

register();
await import("./json-body-worker.ts");
