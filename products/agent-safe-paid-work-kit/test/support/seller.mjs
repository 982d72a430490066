// A hostile x402 v2 seller on 127.0.0.1 for tests: its price can change between quotes, it can
// leave out the PAYMENT-RESPONSE receipt or deny settling, and it keeps every signed authorization
// it receives (what a real seller could take to the chain).
import http from "node:http";

export const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const SELLER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64");

/**
 * price(quoteNumber) → atomic amount of the n-th 402 (0-based); receipts: "settle" | "none" | "fail";
 * handler(body) → response body of a paid call (default "{}").
 */
export async function startSeller({ price = () => "10000", receipts = "settle", payTo = SELLER, network = "eip155:8453", asset = USDC, maxTimeoutSeconds = 300, handler = () => "{}" } = {}) {
  let quotes = 0;
  const received = [];
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const signature = req.headers["payment-signature"];
    if (!signature) {
      const amount = String(price(quotes++));
      const required = {
        x402Version: 2,
        resource: { url: `http://127.0.0.1:${server.address().port}${req.url}`, description: "test", mimeType: "application/json" },
        accepts: [{ scheme: "exact", network, asset, amount, payTo, maxTimeoutSeconds, extra: { name: "USD Coin", version: "2" } }],
      };
      res.writeHead(402, { "content-type": "application/json", "payment-required": b64(required) });
      res.end("{}");
      return;
    }
    const payload = JSON.parse(Buffer.from(signature, "base64").toString("utf8"));
    received.push(payload);
    const headers = { "content-type": "application/json" };
    if (receipts === "settle") headers["payment-response"] = b64({ success: true, transaction: `0x${received.length.toString(16).padStart(64, "0")}`, network, payer: payload.payload?.authorization?.from });
    if (receipts === "fail") headers["payment-response"] = b64({ success: false, errorReason: "insufficient_funds", transaction: "", network });
    res.writeHead(200, headers);
    res.end(await handler(Buffer.concat(chunks).toString("utf8")));
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${server.address().port}/paid`;
  return {
    url,
    received,
    /** Values of every authorization the seller holds. */
    signedValues: () => received.map((p) => p.payload.authorization?.value ?? p.payload.permit2Authorization?.permitted?.amount),
    quotes: () => quotes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections?.();
        server.close(resolve);
      }),
  };
}
