import type { Metrics } from "../../metrics.ts";
import type { Store } from "../../store/store.ts";
import type { TokenBalances } from "../settler/token-balances.ts";
import type { Settlement } from "./settlement.ts";

/** What a kind's payment rules may use of the gate. */
export interface KindServices {
  settlement: Settlement;
  store: Store;
  metrics: Metrics;
  now: () => number;
  settlementTimeoutMs: number;
  /** Jobs one payer may have accepted or being accepted at once on held payments. */
  maxHeldPerPayer: number;
  /** The payers' balances, read at each held admission; absent without chain access. */
  balances?: TokenBalances;
}
