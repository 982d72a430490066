// piscina's and tinypool's bench worker: the same handler as our pool's, at the same CPU priority
// (serveWorker lowers it for ours), exported as the default function both libraries call.
import { register } from "tsx/esm/api";

register();
const { handle } = await import("./handler.ts");
const { runBelowTheEventLoop } = await import("../../src/operations/worker-pool.ts");
runBelowTheEventLoop();
export default handle;
