import { serveWorker } from "../../src/operations/worker-pool.ts";
import { type BenchTask, handle } from "./handler.ts";

await serveWorker<BenchTask, string>(handle);
