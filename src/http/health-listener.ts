import type { Server } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import type { Logger } from "pino";
import { listenStartError } from "../startup-error.ts";
import { guardConnections, type HttpLimits, httpServerOptions, PROBE_PATHS } from "./connection-limits.ts";

/** Connections the health listener keeps open at once: probes and a metrics scraper need a handful. */
const HEALTH_MAX_CONNECTIONS = 64;

const notHere = () =>
  new Response("only /healthz, /readyz and /metrics are served on this port\n", {
    status: 404,
    headers: { "content-type": "text/plain; charset=utf-8" },
  });

export interface HealthListener {
  port: number;
  close(): Promise<void>;
}

/**
 * /healthz, /readyz and /metrics on a port of their own (HEALTH_PORT), answered by the same app.
 *
 * A listening socket has one accept queue. A flood of new connections to the public port (thousands
 * a second, each refused at once by the connection caps) fills that queue, and the kernel then drops
 * every new connection's first packet, an orchestrator's probe's too, which retries after 1 s, 3 s:
 * the service looks dead while its event loop is idle. This listener's queue is not shared with the
 * public port, so a probe here measures the process, not the flood. Bind it where only the
 * orchestrator and the metrics scraper reach it (docs/operations.md).
 */
export function startHealthListener(
  fetch: (request: Request) => Response | Promise<Response>,
  options: { host: string; port: number; limits: HttpLimits; log: Logger },
): Promise<HealthListener> {
  const limits = { ...options.limits, maxConnections: HEALTH_MAX_CONNECTIONS };
  return new Promise((resolve, reject) => {
    const server = serve(
      {
        fetch: (request) => (PROBE_PATHS.has(new URL(request.url).pathname) ? fetch(request) : notHere()),
        port: options.port,
        hostname: options.host,
        serverOptions: httpServerOptions(limits),
      },
      () =>
        resolve({
          port: (server.address() as AddressInfo).port,
          close: () =>
            new Promise<void>((closed) => {
              server.close(() => closed());
              server.closeAllConnections();
            }),
        }),
    ) as Server;
    guardConnections(server, limits, options.log);
    server.once("error", (error) =>
      reject(listenStartError(error, options.host, options.port, "HEALTH_PORT")),
    );
  });
}
