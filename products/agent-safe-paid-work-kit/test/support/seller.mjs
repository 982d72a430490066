// A hostile x402 seller on 127.0.0.1 for tests: x402 v2 or v1, several offered entries, a price that
// can change between quotes, receipts it can leave out or deny, and every signed authorization it
// receives kept (what a real seller could take to the chain).
import http from "node:http";

export const USDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913";
export const SELLER = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8";
const b64 = (value) => Buffer.from(JSON.stringify(value)).toString("base64");

/**
 * price(quoteNumber) → atomic amount of the n-th 402 (0-based), or a list of amounts (one offered
 * entry each); receipts: "settle" | "none" | "fail"; version: 2 | 1; handler(body) → response body.
 */
export async function startSeller({ price = () => "10000", receipts = "settle", payTo = SELLER, network = "eip155:8453", asset = USDC, maxTimeoutSeconds = 300, version = 2, handler = () => "{}", resource } = {}) {
  let quotes = 0;
  const received = [];
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const signature = req.headers["payment-signature"] ?? req.headers["x-payment"];
    const resourceUrl = resource ?? `http://127.0.0.1:${server.address().port}${req.url}`;
    if (!signature) {
      const amounts = [price(quotes++)].flat().map(String);
      if (version === 1) {
        const accepts = amounts.map((amount) => ({ scheme: "exact", network: "base", maxAmountRequired: amount, resource: resourceUrl, description: "test", mimeType: "application/json", payTo, maxTimeoutSeconds, asset, extra: { name: "USD Coin", version: "2" } }));
        res.writeHead(402, { "content-type": "application/json" });
        res.end(JSON.stringify({ x402Version: 1, error: "X-PAYMENT header is required", accepts }));
        return;
      }
      const required = {
        x402Version: 2,
        resource: { url: resourceUrl, description: "test", mimeType: "application/json" },
        accepts: amounts.map((amount) => ({ scheme: "exact", network, asset, amount, payTo, maxTimeoutSeconds, extra: { name: "USD Coin", version: "2" } })),
      };
      res.writeHead(402, { "content-type": "application/json", "payment-required": b64(required) });
      res.end("{}");
      return;
    }
    const payload = JSON.parse(Buffer.from(signature, "base64").toString("utf8"));
    received.push(payload);
    const headers = { "content-type": "application/json" };
    const receiptHeader = version === 1 ? "x-payment-response" : "payment-response";
    if (receipts === "settle") headers[receiptHeader] = b64({ success: true, transaction: `0x${received.length.toString(16).padStart(64, "0")}`, network, payer: payload.payload?.authorization?.from });
    if (receipts === "fail") headers[receiptHeader] = b64({ success: false, errorReason: "insufficient_funds", transaction: "", network });
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
