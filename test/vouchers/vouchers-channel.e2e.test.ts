/**
 * Issue #35's must-show for vouchers, on a local chain this file starts (so the chain outlives a service's
 * graceful stop, whose last claim and settle it checks), with official clients only: `@x402/fetch` and the
 * MCP SDK, each paying through @x402/evm's batch-settlement client scheme (and @x402/evm's exact scheme
 * for the exact payers).
 *
 * - 200 paid calls through one channel over HTTP and 200 through MCP: one deposit transaction each and no
 *   transaction per call, counted from the chain's blocks; after the service's claim and settle, payTo's
 *   balance rose by exactly the sum of the delivered charges; the payer's cooperative refund returns the rest.
 * - Two instances on one store sharing one payer's channel: its calls alternate between them; a lease
 *   held elsewhere on the store makes both answer `channel_busy`; the same voucher sent to both at once
 *   is charged once; exact and voucher payers at once on both instances.
 *
 * Runs on SQLite and PostgreSQL (STORE_SENSITIVE in vitest.config.ts).
 */

import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { x402Client as x402CoreClient } from "@x402/core/client";
import { decodePaymentRequiredHeader, decodePaymentResponseHeader } from "@x402/core/http";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  InMemoryClientChannelStorage,
  updateChannelFromSettle,
} from "@x402/evm/batch-settlement/client";
import { registerExactEvmScheme } from "@x402/evm/exact/client";
import { wrapFetchWithPayment, x402Client, x402HTTPClient } from "@x402/fetch";
import pino from "pino";
import { createPublicClient, http, parseAbiItem } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devAccounts, devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { type LocalChain, startLocalChain } from "../../src/chain/local-chain.ts";
import { BASE_USDC_ADDRESS } from "../../src/config.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import {
  databaseUrlOf,
  freePort,
  jsonPost,
  startTestService,
  type TestService,
  usdcBalances,
} from "../helpers/service.ts";
import { callTool, connectMcp, termsOf } from "../mcp/paying-mcp-client.ts";

const CALLS = 200;
/** Enough for every call here from one deposit (the route costs 0.01 USDC): one deposit per channel. */
const MIN_DEPOSIT = "5000000";
const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");

const payTo = devAccounts().payTo.address;
const url = (service: TestService) => `${service.url}${unitConvert.path}`;
const input = unitConvert.example.input;
type Hex = `0x${string}`;

/**
 * Self mode against this file's chain, vouchers on, no claim before the graceful stop's (claims are counted):
 * the timer and the threshold are both beyond what these runs charge, so the only claim is the stop's.
 */
const selfMode = (chain: LocalChain, settlerKey: Hex, extra: Record<string, string> = {}) => ({
  PAYMENT_MODE: "self",
  X402_SETTLER_PRIVATE_KEY: settlerKey,
  RPC_URL: chain.rpcUrl,
  X402_PAY_TO: payTo,
  X402_VOUCHERS: "on",
  X402_VOUCHER_MIN_DEPOSIT: MIN_DEPOSIT,
  X402_VOUCHER_CLAIM_INTERVAL_MS: String(24 * 3600 * 1000),
  X402_VOUCHER_CLAIM_THRESHOLD: String(BigInt(MIN_DEPOSIT) * 1000n),
  ...extra,
});

/** The official batch-settlement client of one payer: its scheme, its own channel storage, @x402/fetch over it. */
function voucherPayer(chain: LocalChain, privateKey: Hex) {
  const publicClient = createPublicClient({ transport: http(chain.rpcUrl), pollingInterval: 50 });
  const account = privateKeyToAccount(privateKey);
  const storage = new InMemoryClientChannelStorage();
  const scheme = new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), { storage });
  const client = new x402Client().register("eip155:8453", scheme);
  return { account, storage, scheme, client, pay: wrapFetchWithPayment(fetch, client) };
}

/** The official exact client of one payer over @x402/fetch. */
function exactPayer(privateKey: Hex) {
  const client = new x402Client();
  registerExactEvmScheme(client, { signer: privateKeyToAccount(privateKey) });
  return wrapFetchWithPayment(fetch, client);
}

/** The channel state a paid answer's PAYMENT-RESPONSE carries. */
function settledChannel(answer: Response) {
  const settled = decodePaymentResponseHeader(answer.headers.get("payment-response") as string);
  return (settled.extra as { channelState: { channelId: Hex; chargedCumulativeAmount: string } })
    .channelState;
}

function chainReader(chain: LocalChain) {
  const client = createPublicClient({ transport: http(chain.rpcUrl), pollingInterval: 50 });
  return {
    client,
    block: () => client.getBlockNumber({ cacheTime: 0 }),
    /** Every transaction mined in (from, to]. */
    async transactions(from: bigint, to: bigint) {
      const hashes: Hex[] = [];
      for (let block = from + 1n; block <= to; block++) {
        hashes.push(...(await client.getBlock({ blockNumber: block })).transactions);
      }
      return Promise.all(hashes.map((hash) => client.getTransaction({ hash })));
    },
    /** USDC Transfer events to payTo in (from, to]. */
    transfersToPayTo: (from: bigint, to: bigint) =>
      client.getLogs({
        address: BASE_USDC_ADDRESS,
        event: TRANSFER,
        args: { to: payTo },
        fromBlock: from + 1n,
        toBlock: to,
      }),
    async channel(channelId: Hex) {
      const [balance, totalClaimed] = (await client.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: batchSettlementAbi,
        functionName: "channels",
        args: [channelId],
      })) as readonly [bigint, bigint];
      return { balance, totalClaimed };
    },
  };
}

const sumOf = (amounts: { amount: string }[]) =>
  amounts.reduce((sum, { amount }) => sum + BigInt(amount), 0n);

describe(`${CALLS} voucher-paid calls through one channel, over HTTP and over MCP`, () => {
  let chain: LocalChain;
  let service: TestService;
  let ledger: Store;
  let mcp: Client;
  let reader: ReturnType<typeof chainReader>;
  let balanceOf: ReturnType<typeof usdcBalances>;
  let payToBefore: bigint;
  const http402 = { payer: undefined as ReturnType<typeof voucherPayer> | undefined, channelId: "0x" as Hex };
  const mcpChannel = { channelId: "0x" as Hex, payer: "0x" as Hex };

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    reader = chainReader(chain);
    balanceOf = usdcBalances(chain.rpcUrl);
    payToBefore = await balanceOf(payTo);
    service = await startTestService(selfMode(chain, devPrivateKey(0)), { operations: [unitConvert] });
    ledger = await openStore(service.config.database);
    mcp = await connectMcp(service.url);
  });
  afterAll(async () => {
    await mcp?.close();
    await ledger?.close();
    await service?.stop();
    await chain?.stop();
  });

  it(`HTTP, @x402/fetch: ${CALLS} calls = one deposit transaction, none per call; a ledger row each`, async () => {
    const payer = voucherPayer(chain, devPrivateKey(2));
    http402.payer = payer;
    const payerBefore = await balanceOf(payer.account.address);
    const blockBefore = await reader.block();
    const cumulatives: string[] = [];
    for (let i = 0; i < CALLS; i++) {
      const answer = await payer.pay(url(service), jsonPost(input));
      expect(answer.status, await answer.clone().text()).toBe(200);
      const state = settledChannel(answer);
      http402.channelId = state.channelId;
      cumulatives.push(state.chargedCumulativeAmount);
      await answer.body?.cancel();
    }
    const transactions = await reader.transactions(blockBefore, await reader.block());
    // The one transaction: the deposit, sent by the service's settler to the settlement contract.
    expect(transactions.map((tx) => tx.to?.toLowerCase())).toEqual([BATCH_SETTLEMENT_ADDRESS.toLowerCase()]);
    const { balance, totalClaimed } = await reader.channel(http402.channelId);
    expect(balance).toBe(BigInt(MIN_DEPOSIT));
    expect(totalClaimed).toBe(0n);
    expect(await balanceOf(payer.account.address)).toBe(payerBefore - balance);
    expect(await balanceOf(payTo)).toBe(payToBefore);

    const charges = await ledger.vouchers.charges(http402.channelId);
    const price = BigInt(charges[0]?.amount ?? "0");
    expect(price).toBeGreaterThan(0n);
    expect(charges.map((charge) => charge.cumulative)).toEqual(
      Array.from({ length: CALLS }, (_, i) => String(price * BigInt(i + 1))),
    );
    expect(cumulatives).toEqual(charges.map((charge) => charge.cumulative));
    expect(new Set(charges.map((charge) => `${charge.door} ${charge.operationId}`))).toEqual(
      new Set([`http ${unitConvert.id}`]),
    );
  });

  it(`MCP, the SDK client with the batch-settlement scheme: ${CALLS} tool calls = one deposit, none per call`, async () => {
    const account = privateKeyToAccount(devPrivateKey(3));
    const publicClient = createPublicClient({ transport: http(chain.rpcUrl), pollingInterval: 50 });
    const storage = new InMemoryClientChannelStorage();
    const client = new x402CoreClient().register(
      service.config.payment.network,
      new BatchSettlementEvmScheme(toClientEvmSigner(account, publicClient as never), { storage }),
    );
    mcpChannel.payer = account.address;
    const args = input as Record<string, unknown>;
    const blockBefore = await reader.block();
    const types: string[] = [];
    for (let i = 0; i < CALLS; i++) {
      const terms = termsOf(await callTool(mcp, unitConvert.id, args));
      const payment = await client.createPaymentPayload(terms);
      const payload = payment.payload as { type: string; deposit?: { amount: string } };
      types.push(payload.type);
      const result = await callTool(mcp, unitConvert.id, args, payment);
      expect(result.isError, JSON.stringify(result).slice(0, 400)).toBeFalsy();
      const settled = result._meta?.["x402/payment-response"] as {
        success: boolean;
        extra: { chargedAmount: string; channelState: { channelId: Hex; chargedCumulativeAmount: string } };
      };
      expect(settled.success).toBe(true);
      mcpChannel.channelId = settled.extra.channelState.channelId;
      // What the official HTTP hook does with PAYMENT-RESPONSE; MCP carries it in the result's _meta.
      await updateChannelFromSettle(storage, {
        server: {
          chargedAmount: settled.extra.chargedAmount,
          chargedCumulativeAmount: settled.extra.channelState.chargedCumulativeAmount,
        },
        local: {
          channelId: mcpChannel.channelId,
          requestAmount: payment.accepted.amount,
          ...(payload.deposit ? { depositAmount: payload.deposit.amount } : {}),
        },
      });
    }
    expect(types).toEqual(["deposit", ...Array.from({ length: CALLS - 1 }, () => "voucher")]);
    const transactions = await reader.transactions(blockBefore, await reader.block());
    expect(transactions.map((tx) => tx.to?.toLowerCase())).toEqual([BATCH_SETTLEMENT_ADDRESS.toLowerCase()]);
    const charges = await ledger.vouchers.charges(mcpChannel.channelId);
    expect(charges).toHaveLength(CALLS);
    expect(new Set(charges.map((charge) => charge.door))).toEqual(new Set(["mcp"]));
    expect(await balanceOf(payTo)).toBe(payToBefore);
  });

  // NOTE for the lead: cooperative refunds (a `refund` payload) are built on another branch (#35, refunds
  // and ledger). On wip/vouchers the gate refuses them (invalid_batch_settlement_evm_refund_payload), so this
  // test fails there until that branch is merged: it is the official client's refund, not a stub.
  it("the payer's cooperative refund (the official client's scheme.refund) returns the rest of the deposit", async () => {
    const payer = http402.payer;
    if (!payer) throw new Error("the HTTP channel was not opened");
    const delivered = sumOf(await ledger.vouchers.charges(http402.channelId));
    const payerBefore = await balanceOf(payer.account.address);
    const { balance } = await reader.channel(http402.channelId);
    // The official refund probes and pays with GET; this route is a POST: the same request as a POST.
    const asPost: typeof fetch = (request, init) =>
      fetch(request, {
        ...init,
        method: "POST",
        body: JSON.stringify(input),
        headers: withJson(init?.headers),
      });
    const refunded = await payer.scheme.refund(url(service), { fetch: asPost });
    expect(refunded.success).toBe(true);
    expect(await balanceOf(payer.account.address)).toBe(payerBefore + (balance - delivered));
    // What was charged stays claimable by the service.
    const after = await reader.channel(http402.channelId);
    expect(after.balance - after.totalClaimed).toBe(delivered - after.totalClaimed);
  });

  it("after the graceful stop's claim and settle, payTo's balance rose by exactly the sum of the delivered charges", async () => {
    const delivered = {
      http: sumOf(await ledger.vouchers.charges(http402.channelId)),
      mcp: sumOf(await ledger.vouchers.charges(mcpChannel.channelId)),
    };
    expect(delivered.http).toBeGreaterThan(0n);
    expect(delivered.mcp).toBeGreaterThan(0n);
    await mcp.close();
    await service.stop();
    expect(await balanceOf(payTo)).toBe(payToBefore + delivered.http + delivered.mcp);
    expect((await reader.channel(http402.channelId)).totalClaimed).toBe(delivered.http);
    expect((await reader.channel(mcpChannel.channelId)).totalClaimed).toBe(delivered.mcp);
  });
});

describe("two instances on one store: one payer's channel shared, the lease held across them, exact and voucher payers at once", () => {
  let chain: LocalChain;
  let first: TestService;
  let second: TestService;
  let ledger: Store;
  let reader: ReturnType<typeof chainReader>;
  let payToAtStart: bigint;
  let exactReceived = 0n;
  let ledgerClosed = false;

  beforeAll(async () => {
    chain = await startLocalChain({ port: await freePort(), log: pino({ level: "silent" }) });
    reader = chainReader(chain);
    // One settlement key per instance (each holds its own); one receiver authorizer for both, so both
    // quote the same channel config: the first instance's settler, which signs the claims.
    const receiverAuthorizer = privateKeyToAccount(devPrivateKey(0)).address;
    first = await startTestService(
      selfMode(chain, devPrivateKey(0), { X402_VOUCHER_RECEIVER_AUTHORIZER: receiverAuthorizer }),
      { operations: [unitConvert] },
    );
    second = await startTestService(
      selfMode(chain, devPrivateKey(9), {
        X402_VOUCHER_RECEIVER_AUTHORIZER: receiverAuthorizer,
        DATABASE_URL: databaseUrlOf(first.config),
      }),
      { operations: [unitConvert] },
    );
    ledger = await openStore(first.config.database);
    payToAtStart = await usdcBalances(chain.rpcUrl)(payTo);
  }, 120_000);
  afterAll(async () => {
    if (!ledgerClosed) await ledger?.close();
    await second?.stop();
    await first?.stop();
    await chain?.stop();
  });

  it("one payer's calls alternate between the instances on one channel: charged in sequence, one deposit", async () => {
    const payer = voucherPayer(chain, devPrivateKey(4));
    const blockBefore = await reader.block();
    let channelId = "0x" as Hex;
    for (let i = 0; i < 40; i++) {
      const answer = await payer.pay(url(i % 2 === 0 ? first : second), jsonPost(input));
      expect(answer.status, await answer.clone().text()).toBe(200);
      channelId = settledChannel(answer).channelId;
      await answer.body?.cancel();
    }
    const charges = await ledger.vouchers.charges(channelId);
    const price = BigInt(charges[0]?.amount ?? "0");
    expect(charges.map((charge) => charge.cumulative)).toEqual(
      Array.from({ length: 40 }, (_, i) => String(price * BigInt(i + 1))),
    );
    expect(await reader.transactions(blockBefore, await reader.block())).toHaveLength(1);
  });

  it("a lease held on the store makes both instances answer channel_busy, charging nothing; the same voucher sent to both at once is charged once", async () => {
    const payer = voucherPayer(chain, devPrivateKey(5));
    const opened = await payer.pay(url(first), jsonPost(input));
    expect(opened.status).toBe(200);
    const { channelId } = settledChannel(opened);
    const channel = await ledger.vouchers.getChannel(channelId.toLowerCase());
    if (!channel) throw new Error("no channel row");

    // The next voucher, signed by the official client from the route's terms.
    const unpaid = await fetch(url(first), jsonPost(input));
    const terms = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
    await unpaid.body?.cancel();
    const signed = await payer.client.createPaymentPayload(terms);
    const header = new x402HTTPClient(payer.client).encodePaymentSignatureHeader(signed);
    const send = (service: TestService) => fetch(url(service), jsonPost(input, header));

    // A third holder of the lease: this test's own connection to the store, as another instance would.
    const holder = "test-holder";
    const now = Date.now();
    const held = await ledger.vouchers.beginCall({
      channelId: channel.channelId,
      network: channel.network,
      config: channel.config,
      signedMaxClaimable: (signed.payload as { voucher: { maxClaimableAmount: string } }).voucher
        .maxClaimableAmount,
      owner: holder,
      now,
      leaseUntil: now + 60_000,
    });
    expect(held.kind).toBe("begun");
    for (const service of [first, second]) {
      const busy = await send(service);
      expect(busy.status).toBe(402);
      expect(((await busy.json()) as { reason: string }).reason).toBe(
        "invalid_batch_settlement_evm_channel_busy",
      );
      expect(Number(busy.headers.get("retry-after"))).toBeGreaterThan(0);
    }
    expect((await ledger.vouchers.charges(channel.channelId)).length).toBe(1);
    await ledger.vouchers.releaseCall(channel.channelId, holder);

    // Released: the same voucher, 10 copies to each instance at once: one charge; every copy is the
    // delivered answer (the kept answer of a retry) or channel_busy, never a second charge.
    const answers = await Promise.all(
      Array.from({ length: 20 }, (_, i) => send(i % 2 === 0 ? first : second)),
    );
    const bodies = await Promise.all(answers.map((answer) => answer.text()));
    const delivered = new Set<string>();
    answers.forEach((answer, i) => {
      const body = bodies[i] as string;
      if (answer.status === 200) delivered.add(body);
      else {
        expect(answer.status, body).toBe(402);
        expect((JSON.parse(body) as { reason: string }).reason).toBe(
          "invalid_batch_settlement_evm_channel_busy",
        );
      }
    });
    expect(delivered.size).toBe(1);
    const charges = await ledger.vouchers.charges(channel.channelId);
    expect(charges.map((charge) => charge.cumulative)).toEqual([
      charges[0]?.amount,
      String(2n * BigInt(charges[0]?.amount ?? "0")),
    ]);
  });

  it("exact and voucher payers at once on both instances: a transfer per exact call, a deposit per voucher payer, every call charged once", async () => {
    const exactKeys = [devPrivateKey(6), devPrivateKey(7)];
    const voucherKeys = [devPrivateKey(8), devPrivateKey(2)];
    const PER_PAYER = 8;
    const payToBefore = await usdcBalances(chain.rpcUrl)(payTo);
    const blockBefore = await reader.block();
    let exactCalls = 0;
    const voucherChannels = new Set<Hex>();
    await Promise.all([
      ...exactKeys.map(async (key, p) => {
        const pay = exactPayer(key);
        for (let i = 0; i < PER_PAYER; i++) {
          const answer = await pay(url((i + p) % 2 === 0 ? first : second), jsonPost(input));
          expect(answer.status, await answer.clone().text()).toBe(200);
          exactCalls++;
          await answer.body?.cancel();
        }
      }),
      ...voucherKeys.map(async (key, p) => {
        const { pay } = voucherPayer(chain, key);
        for (let i = 0; i < PER_PAYER; i++) {
          const answer = await pay(url((i + p) % 2 === 0 ? first : second), jsonPost(input));
          expect(answer.status, await answer.clone().text()).toBe(200);
          voucherChannels.add(settledChannel(answer).channelId);
          await answer.body?.cancel();
        }
      }),
    ]);
    const blockAfter = await reader.block();
    const price = BigInt(
      decodePaymentRequiredHeader(
        (await fetch(url(first), jsonPost(input))).headers.get("payment-required") as string,
      ).accepts.find((entry) => entry.scheme === "exact")?.amount ?? "0",
    );
    // Each exact call: its own USDC transfer to payTo. Each voucher payer: one deposit into its channel.
    const transfers = await reader.transfersToPayTo(blockBefore, blockAfter);
    expect(exactCalls).toBe(exactKeys.length * PER_PAYER);
    expect(transfers.map((log) => log.args.value)).toEqual(transfers.map(() => price));
    expect(transfers).toHaveLength(exactCalls);
    const transactions = await reader.transactions(blockBefore, blockAfter);
    const deposits = transactions.filter(
      (tx) => tx.to?.toLowerCase() === BATCH_SETTLEMENT_ADDRESS.toLowerCase(),
    );
    expect(deposits).toHaveLength(voucherKeys.length);
    expect(transactions).toHaveLength(exactKeys.length * PER_PAYER + voucherKeys.length);
    expect(voucherChannels.size).toBe(voucherKeys.length);
    for (const channelId of voucherChannels) {
      expect(await ledger.vouchers.charges(channelId)).toHaveLength(PER_PAYER);
    }
    // payTo got the exact payments only: the vouchers are claimed later.
    expect(await usdcBalances(chain.rpcUrl)(payTo)).toBe(payToBefore + price * BigInt(exactCalls));
    exactReceived = price * BigInt(exactCalls);
  });

  it("after both instances stopped, payTo holds every exact payment and every voucher charge, claimed once", async () => {
    // Read before the stops: the first instance's stop drops its test database (a PostgreSQL schema).
    const delivered = new Map<Hex, bigint>();
    for (const channel of await ledger.vouchers.channels()) {
      delivered.set(channel.channelId as Hex, sumOf(await ledger.vouchers.charges(channel.channelId)));
    }
    const vouchersDelivered = [...delivered.values()].reduce((sum, amount) => sum + amount, 0n);
    expect(delivered.size).toBe(4);
    await ledger.close();
    ledgerClosed = true;
    // The second instance's last claim is refused (its settler is not the channels' receiver
    // authorizer); the first's claims and settles every channel.
    await second.stop();
    await first.stop();
    expect(await usdcBalances(chain.rpcUrl)(payTo)).toBe(payToAtStart + exactReceived + vouchersDelivered);
    for (const [channelId, amount] of delivered) {
      expect((await reader.channel(channelId)).totalClaimed).toBe(amount);
    }
  });
});

const withJson = (headers: HeadersInit | undefined): Headers => {
  const merged = new Headers(headers);
  merged.set("content-type", "application/json");
  return merged;
};
