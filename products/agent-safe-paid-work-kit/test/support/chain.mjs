// A stand-in for a chain's JSON-RPC, for the kit's offline tests: its chain id, the time of the block
// the guard asks for (any tag: the stand-in has one block), and USDC's authorizationState(payer,
// nonce) from a set of used nonces. `state.tags` lists the block tags asked for. The project's own tests ask a
// real local chain (anvil with Circle's USDC) instead.
import http from "node:http";

export async function startChainStandIn({ time = Math.floor(Date.now() / 1000), chainId = 8453 } = {}) {
  const state = { time, chainId, used: new Set(), calls: 0, tags: [], hang: false };
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const { id, method, params } = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    state.calls++;
    if (state.hang) return; // never answers (the guard's timeout must end the wait)
    let result;
    if (method === "eth_chainId") result = `0x${state.chainId.toString(16)}`;
    else if (method === "eth_getBlockByNumber") state.tags.push(params[0]);
    if (method === "eth_getBlockByNumber") result = { number: "0x10", timestamp: `0x${state.time.toString(16)}` };
    else if (method === "eth_call") {
      const data = params[0].data;
      const key = `0x${data.slice(34, 74)} 0x${data.slice(74)}`.toLowerCase();
      result = `0x${(state.used.has(key) ? 1 : 0).toString(16).padStart(64, "0")}`;
    }
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify(result === undefined ? { jsonrpc: "2.0", id, error: { code: -32601, message: "method not found" } } : { jsonrpc: "2.0", id, result }));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    state,
    /** The seller took this authorization to the chain. */
    use: (payer, nonce) => state.used.add(`${payer} ${nonce}`.toLowerCase()),
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}
