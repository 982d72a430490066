/**
 * The bad-input list for vouchers, on the local chain with real signatures: each hostile payment
 * is the official client's next payment (@x402/evm's batch-settlement scheme through @x402/core's
 * x402Client) with one thing changed and signed again with a real key. Each gets a 402 with the spec's
 * error code, and after each the ledger (the channel's charged amount, its ledger rows) and the chain (the
 * channel, the payer's and payTo's USDC, the block height: no transaction) are exactly as before.
 */

import {
  decodePaymentRequiredHeader,
  decodePaymentSignatureHeader,
  encodePaymentSignatureHeader,
} from "@x402/core/http";
import type { PaymentPayload, PaymentRequired } from "@x402/core/types";
import { toClientEvmSigner } from "@x402/evm";
import {
  BatchSettlementEvmScheme,
  type BatchSettlementEvmSchemeOptions,
  computeChannelId,
  InMemoryClientChannelStorage,
  signVoucher,
} from "@x402/evm/batch-settlement/client";
import { wrapFetchWithPayment, x402Client } from "@x402/fetch";
import { createPublicClient, http } from "viem";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BATCH_SETTLEMENT_ADDRESS, batchSettlementAbi } from "../../src/chain/batch-settlement.ts";
import { devPrivateKey } from "../../src/chain/dev-accounts.ts";
import { unitConvert } from "../../src/operations/unit-convert/index.ts";
import { openStore } from "../../src/store/open-store.ts";
import type { Store } from "../../src/store/store.ts";
import { jsonPost, startTestService, type TestService, usdcBalances } from "../helpers/service.ts";

type Hex = `0x${string}`;
interface Config {
  payer: Hex;
  payerAuthorizer: Hex;
  receiver: Hex;
  receiverAuthorizer: Hex;
  token: Hex;
  withdrawDelay: number;
  salt: Hex;
}
interface VoucherPayload {
  type: string;
  channelConfig: Config;
  voucher: { channelId: Hex; maxClaimableAmount: string; signature: Hex };
}

const STRANGER = privateKeyToAccount(generatePrivateKey());
const OTHER_ADDRESS = "0x00000000000000000000000000000000DeaDBeef" as Hex;

describe("hostile voucher payments: the spec's error code, nothing charged on the ledger or the chain", () => {
  let service: TestService;
  let ledger: Store;
  let url: string;
  let terms: PaymentRequired;
  const publicClient = () =>
    createPublicClient({ transport: http(service.localChain?.rpcUrl as string), pollingInterval: 50 });

  beforeAll(async () => {
    service = await startTestService({ X402_VOUCHERS: "on" }, { operations: [unitConvert] });
    ledger = await openStore(service.config.database);
    url = `${service.url}${unitConvert.path}`;
    const unpaid = await fetch(url, jsonPost(unitConvert.example.input));
    terms = decodePaymentRequiredHeader(unpaid.headers.get("payment-required") as string);
  });
  afterAll(async () => {
    await ledger?.close();
    await service?.stop();
  });

  /** The official client on `key`'s wallet; `pay` sends its next payment and keeps its state as its hook does. */
  function officialPayer(key: Hex, options: BatchSettlementEvmSchemeOptions = {}) {
    const account = privateKeyToAccount(key);
    const signer = toClientEvmSigner(account, publicClient() as never);
    const storage = new InMemoryClientChannelStorage();
    const scheme = new BatchSettlementEvmScheme(signer, { storage, ...options });
    const client = new x402Client().register(service.config.payment.network, scheme);
    const next = () => client.createPaymentPayload(terms);
    const sent: string[] = [];
    const paying = wrapFetchWithPayment(async (request, init) => {
      // @x402/fetch sends its paid retry as a Request.
      const headers =
        typeof request === "object" && "headers" in request ? request.headers : new Headers(init?.headers);
      const header = headers.get("payment-signature");
      if (header) sent.push(header);
      return fetch(request, init);
    }, client);
    /** One paid call as the client makes it (its state follows the answer); the payment it sent. */
    const pay = async () => {
      const answer = await paying(url, jsonPost(unitConvert.example.input));
      expect(answer.status, await answer.clone().text()).toBe(200);
      return decodePaymentSignatureHeader(sent.at(-1) as string);
    };
    return { account, signer, storage, scheme, client, next, pay };
  }

  const send = (payment: PaymentPayload, input: unknown = unitConvert.example.input) =>
    fetch(url, jsonPost(input, { "payment-signature": encodePaymentSignatureHeader(payment) }));

  /** Everything a charge would move: the ledger's channel and rows, the chain's channel, both balances, the height. */
  async function snapshot(channelId: string, payer: Hex) {
    const chain = publicClient();
    const balanceOf = usdcBalances(service.localChain?.rpcUrl as string);
    const channel = await ledger.vouchers.getChannel(channelId.toLowerCase());
    return {
      charged: channel?.chargedCumulativeAmount ?? null,
      rows: (await ledger.vouchers.charges(channelId.toLowerCase())).length,
      onchain: await chain.readContract({
        address: BATCH_SETTLEMENT_ADDRESS,
        abi: batchSettlementAbi,
        functionName: "channels",
        args: [channelId as Hex],
      }),
      payer: await balanceOf(payer),
      payTo: await balanceOf(service.payTo),
      height: await chain.getBlockNumber(),
    };
  }

  const reasonOf = async (answer: Response) => {
    expect(answer.status).toBe(402);
    const body = (await answer.json()) as { reason: string };
    // The same code in the PAYMENT-REQUIRED header's error, where the official client reads it.
    const header = decodePaymentRequiredHeader(answer.headers.get("payment-required") as string);
    expect(header.error?.split(":")[0]).toBe(body.reason);
    return body.reason;
  };

  /** The payload with its config changed and the voucher signed again, by the payer, for that config's id. */
  async function withConfig(
    payment: PaymentPayload,
    change: Partial<Config>,
    signer: Parameters<typeof signVoucher>[0],
  ): Promise<PaymentPayload> {
    const payload = payment.payload as unknown as VoucherPayload;
    const config = { ...payload.channelConfig, ...change };
    const voucher = await signVoucher(
      signer,
      computeChannelId(config, payment.accepted.network),
      payload.voucher.maxClaimableAmount,
      payment.accepted.network,
    );
    return { ...payment, payload: { ...payload, channelConfig: config, voucher } };
  }

  /** The payload's voucher for another ceiling, signed by `signer`. */
  async function withCeiling(
    payment: PaymentPayload,
    ceiling: bigint,
    signer: Parameters<typeof signVoucher>[0],
  ): Promise<PaymentPayload> {
    const payload = payment.payload as unknown as VoucherPayload;
    const voucher = await signVoucher(
      signer,
      payload.voucher.channelId,
      String(ceiling),
      payment.accepted.network,
    );
    return { ...payment, payload: { ...payload, voucher } };
  }

  it("each hostile voucher: its code, nothing charged; the client's own next voucher is then taken", async () => {
    const payer = officialPayer(devPrivateKey(5));
    const first = await payer.pay();
    await payer.pay();
    const legit = await payer.next();
    const payload = legit.payload as unknown as VoucherPayload;
    expect(payload.type).toBe("voucher");
    const { channelId, maxClaimableAmount } = payload.voucher;
    const ceiling = BigInt(maxClaimableAmount);
    const price = BigInt(legit.accepted.amount);
    const stranger = toClientEvmSigner(STRANGER, publicClient() as never);
    const flipped = `${payload.voucher.signature.slice(0, 10)}${payload.voucher.signature[10] === "0" ? "1" : "0"}${payload.voucher.signature.slice(11)}`;

    const cases: { name: string; payment: () => Promise<PaymentPayload>; input?: unknown; reason: string }[] =
      [
        {
          name: "a config that does not hash to its channel id",
          payment: async () => ({
            ...legit,
            payload: {
              ...payload,
              channelConfig: { ...payload.channelConfig, salt: `0x${"01".repeat(32)}` },
            },
          }),
          reason: "invalid_batch_settlement_evm_channel_id_mismatch",
        },
        {
          name: "a wrong receiver",
          payment: () => withConfig(legit, { receiver: OTHER_ADDRESS }, payer.signer),
          reason: "invalid_batch_settlement_evm_receiver_mismatch",
        },
        {
          name: "a wrong token",
          payment: () => withConfig(legit, { token: OTHER_ADDRESS }, payer.signer),
          reason: "invalid_batch_settlement_evm_token_mismatch",
        },
        {
          name: "a wrong receiver authorizer",
          payment: () => withConfig(legit, { receiverAuthorizer: OTHER_ADDRESS }, payer.signer),
          reason: "invalid_batch_settlement_evm_receiver_authorizer_mismatch",
        },
        {
          name: "a wrong withdraw delay",
          payment: () =>
            withConfig(legit, { withdrawDelay: payload.channelConfig.withdrawDelay + 1 }, payer.signer),
          reason: "invalid_batch_settlement_evm_withdraw_delay_mismatch",
        },
        {
          name: "a forged voucher (its signature altered)",
          payment: async () => ({
            ...legit,
            payload: { ...payload, voucher: { ...payload.voucher, signature: flipped } },
          }),
          reason: "invalid_batch_settlement_evm_voucher_signature",
        },
        {
          name: "a voucher signed by the wrong signer",
          payment: () => withCeiling(legit, ceiling, stranger),
          reason: "invalid_batch_settlement_evm_voucher_signature",
        },
        {
          name: "a voucher below the expected cumulative amount",
          payment: () => withCeiling(legit, ceiling - 1n, payer.signer),
          reason: "invalid_batch_settlement_evm_cumulative_amount_mismatch",
        },
        {
          name: "a voucher above the expected cumulative amount",
          payment: () => withCeiling(legit, ceiling + price, payer.signer),
          reason: "invalid_batch_settlement_evm_cumulative_amount_mismatch",
        },
        {
          name: "a replayed old voucher (the first call's deposit) for another request",
          payment: async () => first,
          input: { ...(unitConvert.example.input as object), value: 7 },
          reason: "invalid_batch_settlement_evm_cumulative_amount_mismatch",
        },
      ];

    const seen: string[] = [];
    for (const hostile of cases) {
      const before = await snapshot(channelId, payer.account.address);
      const reason = await reasonOf(await send(await hostile.payment(), hostile.input));
      seen.push(`${hostile.name}: ${reason}`);
      expect(`${hostile.name}: ${reason}`).toBe(`${hostile.name}: ${hostile.reason}`);
      expect(await snapshot(channelId, payer.account.address), hostile.name).toEqual(before);
    }
    expect(seen).toHaveLength(cases.length);
    // No row was ever made for the channels the changed configs name.
    for (const change of [{ receiver: OTHER_ADDRESS }, { token: OTHER_ADDRESS }]) {
      const forged = await withConfig(legit, change, payer.signer);
      const id = (forged.payload as unknown as VoucherPayload).voucher.channelId.toLowerCase();
      expect(await ledger.vouchers.getChannel(id)).toBeUndefined();
    }

    // The corrective 402 of a mismatch carries the channel as charged, from which the client resumes.
    const corrective = await send(await withCeiling(legit, ceiling + price, payer.signer));
    const extra = decodePaymentRequiredHeader(
      corrective.headers.get("payment-required") as string,
    ).accepts.find((entry) => entry.scheme === "batch-settlement")?.extra as {
      channelState: { chargedCumulativeAmount: string };
    };
    expect(extra.channelState.chargedCumulativeAmount).toBe(String(ceiling - price));

    // The client's own next voucher is taken and charged once.
    const answer = await send(legit);
    expect(answer.status).toBe(200);
    expect((await ledger.vouchers.getChannel(channelId.toLowerCase()))?.chargedCumulativeAmount).toBe(
      String(ceiling),
    );
  });

  it("the same voucher for the same request again gets the kept answer, charged once, no transaction", async () => {
    const payer = officialPayer(devPrivateKey(6));
    await payer.pay();
    const voucher = await payer.next();
    const first = await send(voucher);
    expect(first.status).toBe(200);
    const channelId = (voucher.payload as unknown as VoucherPayload).voucher.channelId;
    const before = await snapshot(channelId, payer.account.address);
    const again = await send(voucher);
    expect(again.status).toBe(200);
    expect(again.headers.get("x-payment-replayed")).toBe("true");
    expect(await again.text()).toBe(await first.text());
    expect(await snapshot(channelId, payer.account.address)).toEqual(before);
  });

  it("two vouchers on one channel at once: channel_busy for the second, then it is taken on retry", async () => {
    const payer = officialPayer(devPrivateKey(7));
    await payer.pay();
    const voucher = await payer.next();
    const channelId = (voucher.payload as unknown as VoucherPayload).voucher.channelId.toLowerCase();
    // The first call holds the channel's lease while its handler runs (here or at another instance).
    const inFlight = "the-first-call";
    expect(
      (
        await ledger.vouchers.takeChannel({
          channelId,
          owner: inFlight,
          now: Date.now(),
          leaseUntil: Date.now() + 600_000,
        })
      )?.kind,
    ).toBe("begun");
    const before = await snapshot(channelId, payer.account.address);
    const busy = await send(voucher);
    expect(busy.headers.get("retry-after")).toMatch(/^[1-5]$/);
    expect(await reasonOf(busy)).toBe("invalid_batch_settlement_evm_channel_busy");
    expect(await snapshot(channelId, payer.account.address)).toEqual(before);
    await ledger.vouchers.releaseCall(channelId, inFlight);
    expect((await send(voucher)).status).toBe(200);

    // Really at once: the next voucher for five different requests. Exactly one is charged; every other is
    // refused (busy while it ran, the corrective 402 after), none charged.
    const nextCeiling = (voucher.payload as unknown as VoucherPayload).voucher.maxClaimableAmount;
    const price = BigInt(voucher.accepted.amount);
    const racing = await withCeiling(voucher, BigInt(nextCeiling) + price, payer.signer);
    const answers = await Promise.all(
      [1, 2, 3, 4, 5].map((value) => send(racing, { ...(unitConvert.example.input as object), value })),
    );
    const statuses = answers.map((answer) => answer.status).sort();
    expect(statuses).toEqual([200, 402, 402, 402, 402]);
    const channel = await ledger.vouchers.getChannel(channelId);
    expect(channel?.chargedCumulativeAmount).toBe(String(BigInt(nextCeiling) + price));
    expect(await ledger.vouchers.charges(channelId)).toHaveLength(3);
  });

  it("a voucher beyond the channel's balance: cumulative_exceeds_balance, nothing charged", async () => {
    // A client that deposits only what the first call needs: the channel's balance is one price.
    const payer = officialPayer(devPrivateKey(8), {
      depositStrategy: (context) => context.minimumDepositAmount,
    });
    await payer.pay();
    const legit = await payer.next();
    // The official client would top up with a deposit; this voucher asks past the balance instead.
    const payload = legit.payload as unknown as VoucherPayload & { deposit?: unknown };
    const { deposit: _deposit, ...voucherOnly } = payload;
    const hostile: PaymentPayload = { ...legit, payload: { ...voucherOnly, type: "voucher" } };
    const channelId = payload.voucher.channelId;
    const before = await snapshot(channelId, payer.account.address);
    expect(BigInt(payload.voucher.maxClaimableAmount)).toBeGreaterThan(
      (before.onchain as readonly [bigint, bigint])[0],
    );
    expect(await reasonOf(await send(hostile))).toBe(
      "invalid_batch_settlement_evm_cumulative_exceeds_balance",
    );
    expect(await snapshot(channelId, payer.account.address)).toEqual(before);
  });

  it("a deposit the payer cannot fund: insufficient_balance, no transaction, no channel kept", async () => {
    const broke = officialPayer(generatePrivateKey());
    const deposit = await broke.next();
    const payload = deposit.payload as unknown as VoucherPayload;
    expect(payload.type).toBe("deposit");
    const before = await snapshot(payload.voucher.channelId, broke.account.address);
    expect(await reasonOf(await send(deposit))).toBe("invalid_batch_settlement_evm_insufficient_balance");
    expect(await snapshot(payload.voucher.channelId, broke.account.address)).toEqual(before);
    expect(await ledger.vouchers.getChannel(payload.voucher.channelId.toLowerCase())).toBeUndefined();
  });
});
