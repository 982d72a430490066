// autocannon ships no types; only what ./load-process.ts uses.
declare module "autocannon" {
  import type { EventEmitter } from "node:events";

  interface Request {
    method?: string;
    path?: string;
    headers?: Record<string, string>;
    body?: string;
    setupRequest?: (request: { headers: Record<string, string> }, context: unknown) => unknown;
  }
  interface Options {
    url: string;
    connections?: number;
    pipelining?: number;
    timeout?: number;
    duration?: number;
    amount?: number;
    requests?: Request[];
  }
  function autocannon(options: Options): EventEmitter;
  export default autocannon;
}
