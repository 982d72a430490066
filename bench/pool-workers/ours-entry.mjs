// Our pool's bench worker: a worker thread does not inherit the tsx loader, so register it first.
import { register } from "tsx/esm/api";

register();
await import("./ours-worker.ts");
