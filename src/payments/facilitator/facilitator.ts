import { InMemoryPendingSettlementStore, x402Facilitator } from "@x402/core/facilitator";
import { type FacilitatorClient, HTTPFacilitatorClient } from "@x402/core/server";
import type { Network } from "@x402/core/types";
import { BatchSettlementEvmScheme } from "@x402/evm/batch-settlement/facilitator";
import type { LocalAccount } from "viem/accounts";
import { privateKeyToAccount } from "viem/accounts";
import { failingOnTransportErrors } from "../../chain/transport-failures.ts";
import type { Config } from "../../config.ts";
import { SETTLEMENT_PENDING, SETTLEMENT_UNCONFIRMED } from "../settlement-reasons.ts";
import { createSettlerSigner } from "../settler/settler-signer.ts";
import type { SettlementJournal, SettlerSigner } from "../settler/signer.ts";
import { ExactEip3009Scheme } from "./exact-eip3009-scheme.ts";

/** How this instance verifies and settles: a facilitator client plus what /readyz needs to probe it. */
export interface PaymentBackend {
  mode: Config["payment"]["mode"];
  facilitator: FacilitatorClient;
  /** The settling account, when settlement happens in-process (local and self modes). */
  settlerAddress?: `0x${string}`;
  /** Throws when the chain (in-process modes) or the remote facilitator cannot be reached. */
  probe(): Promise<{ chain?: string; facilitator: string }>;
  /** Stops the in-process settler's background check (at shutdown, once no payment is in flight). */
  stop(): void;
}

/**
 * Wraps an in-process x402Facilitator (the protocol's reference implementation) as a FacilitatorClient,
 * with the exact EVM scheme verifying each EIP-3009 payment once (see ExactEip3009Scheme) and, given the
 * receiver authorizer's account, the official `batch-settlement` scheme (vouchers).
 *
 * The batch-settlement scheme is @x402/evm's own facilitator, unchanged, on our settler signer: its
 * deposits, claims, settles and refunds are `writeContract` calls, which our signer sends with its nonce
 * allocator (nonces in order, gaps filled) and whose receipts it awaits through its receipt watcher (one
 * block subscription for all), as for exact; its reads (`channels`, `getChannelId`, simulations) go to the
 * same RPC. Nothing of it is rewritten: the deposit's ERC-3009 check, the voucher signature check
 * (EOA or EIP-1271) and the ClaimBatch/Refund signatures are the specification's, by its authors. The
 * receiver authorizer is the settler's key (it signs ClaimBatch and Refund; the scheme advertises it in
 * /supported), so the terms' receiverAuthorizer is an account this service holds.
 */
export function inProcessFacilitator(
  signer: SettlerSigner,
  network: Network,
  receiverAuthorizer?: LocalAccount,
): FacilitatorClient {
  const scheme = new ExactEip3009Scheme(signer);
  // A deposit's settle retried on another call's scheme view still finds its broadcast transaction.
  const pendingSettlementStore = new InMemoryPendingSettlementStore();
  const vouchers = (on: SettlerSigner) =>
    new BatchSettlementEvmScheme(on, receiverAuthorizer, { pendingSettlementStore });
  const withSchemes = (on: SettlerSigner, exact: ExactEip3009Scheme) => {
    const facilitator = new x402Facilitator().register(network, exact);
    return receiverAuthorizer ? facilitator.register(network, vouchers(on)) : facilitator;
  };
  const facilitator = withSchemes(signer, scheme);
  // Each call runs on its own view of the schemes, whose chain calls record their transport failures.
  const through = (recording: SettlerSigner) => withSchemes(recording, scheme.through(recording));
  return {
    verify: (payload, requirements) =>
      failingOnTransportErrors(signer, (recording) => through(recording).verify(payload, requirements)),
    settle: (payload, requirements) =>
      failingOnTransportErrors(signer, (recording) => through(recording).settle(payload, requirements)),
    getSupported: async () =>
      facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient["getSupported"]>>,
  };
}

/**
 * The facilitator as this service's own gate calls it: a settlement that waited for its receipt and got none
 * is `settlement_unconfirmed`, not `settlement_pending`. x402 core settles a "pending" payment once more at
 * once, and the retry waited as long again (two X402_SETTLEMENT_TIMEOUT_MS, past an MCP client's 60 s at the
 * default); the gate asks the token instead and keeps the payment open for the client's retry. The
 * standalone facilitator (`utility402 facilitator`) keeps the protocol's `settlement_pending` for its clients.
 */
export function withOneReceiptWait(facilitator: FacilitatorClient): FacilitatorClient {
  return {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: async (payload, requirements) => {
      const settled = await facilitator.settle(payload, requirements);
      return !settled.success && settled.errorReason === SETTLEMENT_PENDING
        ? { ...settled, errorReason: SETTLEMENT_UNCONFIRMED }
        : settled;
    },
    getSupported: () => facilitator.getSupported(),
  };
}

export function createPaymentBackend(
  config: Config["payment"],
  inProcess?: { privateKey: `0x${string}`; rpcUrl: string; pollingIntervalMs: number },
  journal?: SettlementJournal,
): PaymentBackend {
  if (config.mode === "facilitator") {
    const url = config.facilitatorUrl as string;
    const auth = config.facilitatorAuth;
    const facilitator = new HTTPFacilitatorClient({
      url,
      timeoutMs: config.facilitatorTimeoutMs,
      createAuthHeaders: auth
        ? async () => {
            const headers = { [auth.header]: auth.value };
            return { verify: headers, settle: headers, supported: headers, bazaar: headers };
          }
        : undefined,
    });
    return {
      mode: config.mode,
      facilitator,
      probe: async () => {
        await facilitator.getSupported();
        return { facilitator: `ok (${url})` };
      },
      stop: () => {},
    };
  }
  if (!inProcess) throw new Error(`payment mode ${config.mode} needs a settlement key and an RPC URL`);
  const signer = createSettlerSigner({
    ...inProcess,
    journal,
    chainId: config.chainId,
    confirmationTimeoutMs: config.settlementTimeoutMs,
  });
  return {
    mode: config.mode,
    facilitator: withOneReceiptWait(
      inProcessFacilitator(signer, config.network, privateKeyToAccount(inProcess.privateKey)),
    ),
    settlerAddress: signer.address,
    probe: async () => {
      const block = await signer.blockNumber();
      return { chain: `ok (block ${block})`, facilitator: "ok (in-process)" };
    },
    stop: () => signer.stop(),
  };
}
