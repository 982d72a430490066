import http from "node:http";
import type { AddressInfo } from "node:net";

/**
 * A JSON-RPC stand-in on 127.0.0.1 between a snapshot client and the chain: it counts HTTP round
 * trips (and the JSON-RPC calls inside them) while forwarding, or holds every request unanswered
 * (a hung RPC). Used by the chain-arbitrage-snapshot tests and benchmark.
 */
export interface RpcStandIn {
  url: string;
  roundTrips: number;
  calls: number;
  methods: string[];
  /** Every JSON-RPC call, in order. */
  requests: { method: string; params: unknown[] }[];
  mode: "forward" | "hang";
  close(): Promise<void>;
}

export async function startRpcStandIn(upstream?: string): Promise<RpcStandIn> {
  const held = new Set<http.ServerResponse>();
  const server = http.createServer(async (request, response) => {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    standIn.roundTrips += 1;
    const parsed = JSON.parse(body) as
      | { method: string; params: unknown[] }
      | { method: string; params: unknown[] }[];
    for (const call of Array.isArray(parsed) ? parsed : [parsed]) {
      standIn.calls += 1;
      standIn.methods.push(call.method);
      standIn.requests.push({ method: call.method, params: call.params });
    }
    if (standIn.mode === "hang" || !upstream) {
      held.add(response);
      return;
    }
    const answer = await fetch(upstream, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
    });
    response.writeHead(answer.status, { "content-type": "application/json" });
    response.end(await answer.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const standIn: RpcStandIn = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    roundTrips: 0,
    calls: 0,
    methods: [],
    requests: [],
    mode: upstream ? "forward" : "hang",
    async close() {
      for (const response of held) response.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return standIn;
}
