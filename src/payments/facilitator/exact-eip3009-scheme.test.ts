import { x402ResourceServer } from "@x402/core/server";
import type { PaymentPayload, PaymentRequirements } from "@x402/core/types";
import { ExactEvmScheme } from "@x402/evm/exact/server";
import { encodeAbiParameters, encodeEventTopics, type Hex, HttpRequestError, parseAbi } from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import { signTransferAuthorization } from "../../../test/helpers/payment-faults.ts";
import { devPrivateKey } from "../../chain/dev-accounts.ts";
import { ChainUnavailableError } from "../../chain/transport-failures.ts";
import { BASE_NETWORK, BASE_USDC_ADDRESS } from "../../config.ts";
import { ReceiptTimeoutError } from "../settler/receipt-watcher.ts";
import type { SettlerSigner } from "../settler/signer.ts";
import { inProcessFacilitator, withOneReceiptWait } from "./facilitator.ts";

const network = BASE_NETWORK as `${string}:${string}`;
const payTo = "0x1111111111111111111111111111111111111111";
const payer = privateKeyToAccount(devPrivateKey(2));
const FIRST_TX = `0x${"aa".repeat(32)}` as Hex;
const TRANSFER = parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]);

const requirements: PaymentRequirements = {
  scheme: "exact",
  network,
  asset: BASE_USDC_ADDRESS,
  amount: "1000",
  payTo,
  maxTimeoutSeconds: 300,
  extra: { name: "USD Coin", version: "2" },
};

async function signedPayment(): Promise<PaymentPayload> {
  const now = Math.floor(Date.now() / 1000);
  const authorization = {
    from: payer.address,
    to: payTo as Hex,
    value: "1000",
    validAfter: String(now - 60),
    validBefore: String(now + 300),
    nonce: `0x${"11".repeat(32)}` as Hex,
  };
  const signature = await signTransferAuthorization(payer, {
    ...authorization,
    value: 1000n,
    validAfter: BigInt(authorization.validAfter),
    validBefore: BigInt(authorization.validBefore),
  });
  return { x402Version: 2, accepted: requirements, payload: { signature, authorization } } as PaymentPayload;
}

/** The receipt of the one transfer the payment authorizes, as the chain would log it. */
const paidReceipt = () => ({
  status: "success",
  logs: [
    {
      address: BASE_USDC_ADDRESS,
      topics: encodeEventTopics({
        abi: TRANSFER,
        eventName: "Transfer",
        args: { from: payer.address, to: payTo },
      }),
      data: encodeAbiParameters([{ type: "uint256" }], [1000n]),
      blockNumber: 1n,
      transactionHash: FIRST_TX,
      logIndex: 0,
      blockHash: `0x${"cc".repeat(32)}`,
      transactionIndex: 0,
      removed: false,
    },
  ],
});

/**
 * A settler whose first receipt wait times out (the transaction landed; its receipt was slow), and
 * whose later waits answer `laterReceipt`. It records every broadcast and counts the receipt waits.
 */
function slowReceiptSigner(laterReceipt: () => unknown, { firstWaitTimesOut = true } = {}) {
  const broadcasts: string[] = [];
  let waits = firstWaitTimesOut ? 0 : 1;
  let receiptWaits = 0;
  const signer = {
    address: "0x2222222222222222222222222222222222222222",
    getAddresses: () => ["0x2222222222222222222222222222222222222222"],
    getCode: async ({ address }: { address: string }) =>
      address.toLowerCase() === BASE_USDC_ADDRESS.toLowerCase() ? "0x6080" : undefined,
    readContract: async () => true,
    verifyTypedData: async () => true,
    blockNumber: async () => 1n,
    estimateContractGas: async () => 60_000n,
    sendContractCall: async () => {
      broadcasts.push("fast path");
      return FIRST_TX;
    },
    writeContract: async () => {
      broadcasts.push("reference scheme");
      return `0x${"bb".repeat(32)}`;
    },
    sendTransaction: async () => {
      throw new Error("not used");
    },
    waitForTransactionReceipt: async ({ hash }: { hash: Hex }) => {
      receiptWaits++;
      if (waits++ === 0) throw new ReceiptTimeoutError(hash, 30_000);
      return laterReceipt();
    },
  } as unknown as SettlerSigner;
  return { signer, broadcasts, receiptWaits: () => receiptWaits };
}

describe("the exact EIP-3009 scheme with a settlement whose receipt is slow", () => {
  it("waits for the transaction it sent when the settlement is retried, and never sends the authorization twice", async () => {
    const { signer, broadcasts, receiptWaits } = slowReceiptSigner(paidReceipt);
    const server = new x402ResourceServer(withOneReceiptWait(inProcessFacilitator(signer, network))).register(
      network,
      new ExactEvmScheme(),
    );
    await server.initialize();
    const payment = await signedPayment();
    expect((await server.verifyPayment(payment, requirements)).isValid).toBe(true);
    // One wait per settlement call: x402 core does not retry "unconfirmed" (it would wait as long again).
    const first = await server.settlePayment(payment, requirements);
    expect(first).toMatchObject({
      success: false,
      errorReason: "settlement_unconfirmed",
      transaction: FIRST_TX,
    });
    expect(receiptWaits()).toBe(1);
    // The client's retry (or the gate's resume) waits for the first transaction instead of sending another.
    const settled = await server.settlePayment(payment, requirements);
    expect(settled).toMatchObject({ success: true, transaction: FIRST_TX });
    expect(broadcasts).toEqual(["fast path"]);
  });

  it("answers unconfirmed, with the transaction it sent, after one receipt wait", async () => {
    const { signer, broadcasts, receiptWaits } = slowReceiptSigner(() => {
      throw new ReceiptTimeoutError(FIRST_TX, 30_000);
    });
    const server = new x402ResourceServer(withOneReceiptWait(inProcessFacilitator(signer, network))).register(
      network,
      new ExactEvmScheme(),
    );
    await server.initialize();
    const payment = await signedPayment();
    await server.verifyPayment(payment, requirements);
    const outcome = await server.settlePayment(payment, requirements).then(
      (result) => result,
      (error: { errorReason?: string; transaction?: string }) => error,
    );
    expect(outcome).toMatchObject({ errorReason: "settlement_unconfirmed", transaction: FIRST_TX });
    expect(receiptWaits()).toBe(1);
    expect(broadcasts).toEqual(["fast path"]);
  });

  it("keeps the protocol's settlement_pending for the standalone facilitator's clients", async () => {
    const { signer, receiptWaits } = slowReceiptSigner(() => {
      throw new ReceiptTimeoutError(FIRST_TX, 30_000);
    });
    const facilitator = inProcessFacilitator(signer, network);
    const payment = await signedPayment();
    expect((await facilitator.verify(payment, requirements)).isValid).toBe(true);
    expect(await facilitator.settle(payment, requirements)).toMatchObject({
      success: false,
      errorReason: "settlement_pending",
      transaction: FIRST_TX,
    });
    expect(receiptWaits()).toBe(1);
  });
});

describe("the exact EIP-3009 scheme reading the settlement's Transfer log", () => {
  const withLog = (change: (log: ReturnType<typeof paidReceipt>["logs"][number]) => object) => () => {
    const receipt = paidReceipt();
    return { ...receipt, logs: [change(receipt.logs[0] as ReturnType<typeof paidReceipt>["logs"][number])] };
  };
  const otherAddress = "0x3333333333333333333333333333333333333333";
  const topics = (args: { from: Hex; to: Hex }) =>
    encodeEventTopics({ abi: TRANSFER, eventName: "Transfer", args });
  it.each([
    ["the authorized transfer", true, paidReceipt],
    [
      "another amount",
      false,
      withLog((log) => ({ ...log, data: encodeAbiParameters([{ type: "uint256" }], [999n]) })),
    ],
    [
      "another payee",
      false,
      withLog((log) => ({ ...log, topics: topics({ from: payer.address, to: otherAddress }) })),
    ],
    [
      "another payer",
      false,
      withLog((log) => ({ ...log, topics: topics({ from: otherAddress, to: payTo }) })),
    ],
    ["another token", false, withLog((log) => ({ ...log, address: otherAddress }))],
    [
      "another event with the same layout (Approval)",
      false,
      withLog((log) => ({
        ...log,
        topics: encodeEventTopics({
          abi: parseAbi(["event Approval(address indexed owner, address indexed spender, uint256 value)"]),
          eventName: "Approval",
          args: { owner: payer.address, spender: payTo },
        }),
      })),
    ],
    ["no log", false, () => ({ ...paidReceipt(), logs: [] })],
  ] as const)("%s: settled %s", async (_case, settled, receipt) => {
    const { signer } = slowReceiptSigner(receipt, { firstWaitTimesOut: false });
    const server = new x402ResourceServer(inProcessFacilitator(signer, network)).register(
      network,
      new ExactEvmScheme(),
    );
    await server.initialize();
    const payment = await signedPayment();
    await server.verifyPayment(payment, requirements);
    const outcome = await server.settlePayment(payment, requirements).then(
      (result) => result,
      (error: { errorReason?: string; success?: boolean }) => error,
    );
    if (settled) expect(outcome).toMatchObject({ success: true, transaction: FIRST_TX });
    else expect(outcome).toMatchObject({ errorReason: "invalid_exact_evm_transfer_event_mismatch" });
  });
});

describe("the in-process facilitator when the chain cannot be reached", () => {
  const unreachable = () => new HttpRequestError({ url: "http://127.0.0.1:9/", details: "fetch failed" });

  it("answers a lost broadcast as an unknown outcome, not a refused payment", async () => {
    const { signer } = slowReceiptSigner(paidReceipt);
    const facilitator = inProcessFacilitator(
      {
        ...signer,
        sendContractCall: async () => {
          throw unreachable();
        },
      },
      network,
    );
    const payment = await signedPayment();
    expect((await facilitator.verify(payment, requirements)).isValid).toBe(true);
    await expect(facilitator.settle(payment, requirements)).rejects.toBeInstanceOf(ChainUnavailableError);
  });

  it("answers a verification the reference scheme refused after its chain calls failed as unknown too", async () => {
    const { signer } = slowReceiptSigner(paidReceipt);
    const failing = {
      ...signer,
      // The token refuses the simulation, so the reference scheme is asked for the reason; its reads fail.
      estimateContractGas: async () => {
        throw new Error("execution reverted: FiatTokenV2: invalid signature");
      },
      readContract: async () => {
        throw unreachable();
      },
      verifyTypedData: async () => {
        throw unreachable();
      },
    } as SettlerSigner;
    const facilitator = inProcessFacilitator(failing, network);
    await expect(facilitator.verify(await signedPayment(), requirements)).rejects.toBeInstanceOf(
      ChainUnavailableError,
    );
    // With its reads answered, the reference scheme gives a verdict instead of an error.
    const answering = inProcessFacilitator(
      { ...failing, readContract: signer.readContract } as SettlerSigner,
      network,
    );
    await expect(answering.verify(await signedPayment(), requirements)).resolves.toHaveProperty("isValid");
  });
});
