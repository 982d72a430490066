// The audit worker's entry point. A worker thread does not inherit the tsx loader of the main
// thread (and `execArgv: ["--import", "tsx"]` does not apply to a worker's entry module on
// Node 20), so this plain module registers tsx itself, then loads the TypeScript worker; the
// same way bin/utility402.js starts the service.
// Sources only: built JavaScript (dist/) starts the compiled worker itself (workerModule, worker-pool.ts).
import { register } from "tsx/esm/api";

register();
await import("./worker.ts");
