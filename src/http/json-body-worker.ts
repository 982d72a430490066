import { decodeBody, parseJsonBody } from "../input/parse-input.ts";
import { serveWorker } from "../operations/worker-pool.ts";
import type { LargeJsonBodyTask } from "./large-json-body.ts";

// Decodes and checks a large JSON body (parseJsonBody's checks, a thrown 400 keeps its pointer) and
// sends the parsed value back.
await serveWorker<LargeJsonBodyTask, unknown>(({ body, operation }) =>
  parseJsonBody(decodeBody(body), operation),
);
