import type { x402ResourceServer } from "@x402/core/server";
import type { Logger } from "pino";
import type { OperationKind } from "../../contract/operation.ts";
import type { Metrics } from "../../metrics.ts";
import type { Store } from "../../store/store.ts";
import type { AuthorizationChecker } from "../settler/authorization-state.ts";
import type { TokenBalances } from "../settler/token-balances.ts";
import type { VoucherGate } from "../vouchers/voucher-gate.ts";
import type { LeaseKeeper } from "./lease-keeper.ts";
import type { OfferReceipts } from "./offer-receipt.ts";
import type { PaymentKind } from "./operation-kinds.ts";
import type { KeptAnswers } from "./paid-request.ts";

/** What a PaymentGate is built from (gate.ts): its store, chain access and the kinds of payment it takes. */
export interface PaymentGateOptions {
  resourceServer: x402ResourceServer;
  store: Store;
  metrics: Metrics;
  /** How the ledger keeps answers: the transport's form (src/http/x402-answers.ts). */
  answers: KeptAnswers;
  /** Chain access to resolve unknown settlements; absent in facilitator mode without RPC_URL. */
  authorizations?: AuthorizationChecker;
  /** Signs each settlement's receipt (offer-receipt.ts); absent: settlements carry none. */
  receipts?: OfferReceipts;
  /** Epoch milliseconds; injectable so tests can move past leases and replay windows. */
  now?: () => number;
  /** How long one settlement may wait for its receipt; leases cover two of them. */
  settlementTimeoutMs: number;
  /** Jobs one payer may have accepted or being accepted at once on held payments. */
  maxHeldPerPayer?: number;
  /** The payers' token balances, read at each held admission; absent without chain access. */
  balances?: TokenBalances;
  /** How each kind of operation is paid; by default PAYMENT_KINDS. */
  kinds?: Readonly<Record<OperationKind, PaymentKind>>;
  /** The voucher path (x402 batch-settlement); absent: vouchers are refused as not quoted. */
  vouchers?: VoucherGate;
  /** Shared with the recovery sweeper; by default one of the gate's own. */
  leases?: LeaseKeeper;
  log?: Logger;
}
