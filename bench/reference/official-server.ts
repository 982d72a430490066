/**
 * The reference: a paid POST /v1/csv-cleanup at USD 2.00 made only of the official x402 packages
 * (`@x402/hono` paymentMiddleware, `@x402/core` resource server, the `@x402/evm` exact facilitator
 * in-process), configured the way their documentation shows: a viem wallet client on Base (its
 * default 1 s receipt polling) with viem's nonceManager. Only the handler's work is shared with
 * utility402 (the same csv-cleanup schema and logic), so the comparison is of the payment stacks.
 *
 * Environment: PORT, RPC_URL, SETTLER_PRIVATE_KEY, PAY_TO. Run by bench/paid-path.bench.ts.
 */
import { serve } from "@hono/node-server";
import { x402Facilitator } from "@x402/core/facilitator";
import type { FacilitatorClient } from "@x402/core/server";
import { toFacilitatorEvmSigner } from "@x402/evm";
import { ExactEvmScheme as ExactEvmFacilitatorScheme } from "@x402/evm/exact/facilitator";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { paymentMiddleware, x402ResourceServer } from "@x402/hono";
import { Hono } from "hono";
import { createWalletClient, http, publicActions } from "viem";
import { nonceManager, privateKeyToAccount } from "viem/accounts";
import { base } from "viem/chains";
import { cleanupRows } from "../../src/operations/csv-cleanup/cleanup.ts";
import { CsvCleanupRequest } from "../../src/operations/csv-cleanup/schema.ts";

const env = (name: string) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is required`);
  return value;
};
const NETWORK = "eip155:8453" as const;

const client = createWalletClient({
  account: privateKeyToAccount(env("SETTLER_PRIVATE_KEY") as `0x${string}`, { nonceManager }),
  chain: base,
  transport: http(env("RPC_URL")),
}).extend(publicActions);
const signer = toFacilitatorEvmSigner({
  address: client.account.address,
  // biome-ignore lint/suspicious/noExplicitAny: the x402 signer interface is ABI-agnostic; viem's typing is not.
  readContract: (args) => client.readContract(args as any),
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  verifyTypedData: (args) => client.verifyTypedData(args as any),
  // biome-ignore lint/suspicious/noExplicitAny: as above.
  writeContract: (args) => client.writeContract(args as any),
  sendTransaction: (args) => client.sendTransaction(args),
  waitForTransactionReceipt: (args) => client.waitForTransactionReceipt(args),
  getCode: (args) => client.getCode(args),
});
const facilitator = new x402Facilitator().register(NETWORK, new ExactEvmFacilitatorScheme(signer));
const inProcess: FacilitatorClient = {
  verify: (payload, requirements) => facilitator.verify(payload, requirements),
  settle: (payload, requirements) => facilitator.settle(payload, requirements),
  getSupported: async () =>
    facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient["getSupported"]>>,
};
const resourceServer = new x402ResourceServer(inProcess).register(NETWORK, new ExactEvmScheme());

const app = new Hono();
app.get("/healthz", (c) => c.json({ status: "ok" }));
app.use(
  paymentMiddleware(
    {
      "POST /v1/csv-cleanup": {
        accepts: { scheme: "exact", price: "$2.00", network: NETWORK, payTo: env("PAY_TO") },
        description: "Clean and deduplicate CSV/JSON rows",
        mimeType: "application/json",
      },
    },
    resourceServer,
  ),
);
app.post("/v1/csv-cleanup", async (c) => {
  const parsed = CsvCleanupRequest.safeParse(await c.req.json());
  if (!parsed.success) return c.json({ error: parsed.error.issues }, 400);
  return c.json(cleanupRows(parsed.data));
});

const server = serve({ fetch: app.fetch, port: Number(env("PORT")), hostname: "127.0.0.1" });
process.once("SIGTERM", () => server.close(() => process.exit(0)));
