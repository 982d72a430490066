import type { Logger } from "pino";
import { Counter, type Registry } from "prom-client";
import type { Store } from "../../store/store.ts";
import type { SettlementJournal, SettlementTransactionNote } from "./signer.ts";

export const SETTLEMENT_TRANSACTIONS_METRIC = "utility402_settlement_transactions_lost_total";

/**
 * The settler's journal of transactions the chain lost, kept in the ledger's store (table
 * `settlement_transactions`, joined with the payment by transaction hash), counted in a metric and
 * logged: a `settled` payment whose transfer vanished and could not be made true again (`reverted`,
 * `lost`) is an error the operator sees, never a silent `settled`.
 */
export function createStoreJournal(
  store: Store,
  log: Logger,
): SettlementJournal & { registerMetrics(registry: Registry): void; flush(): Promise<void> } {
  const counts = new Map<string, number>();
  let counter: Counter | undefined;
  let writes: Promise<void> = Promise.resolve();
  return {
    note(note: SettlementTransactionNote) {
      counts.set(note.event, (counts.get(note.event) ?? 0) + 1);
      counter?.inc({ event: note.event });
      const fields = { txHash: note.txHash, nonce: note.nonce, kind: note.kind, resent: note.resent };
      if (note.event === "reverted" || note.event === "lost") {
        log.error(
          { ...fields, detail: note.detail },
          "a settlement transaction the chain lost could not be made true again: its payment is not backed by a transfer",
        );
      } else if (note.event === "dropped") {
        log.warn(fields, "the chain lost a settlement transaction: sending it again");
      } else {
        log.info({ ...fields, event: note.event }, "settlement transaction repair");
      }
      // In order: a later event of the same transaction must win.
      writes = writes
        .then(() =>
          store.noteSettlementTransaction({
            txHash: note.txHash,
            account: note.account,
            nonce: note.nonce,
            kind: note.kind,
            state: note.event,
            resent: note.resent,
            detail: note.detail ?? null,
            at: Date.now(),
          }),
        )
        .catch((error) =>
          log.error({ err: error, ...fields }, "could not record a settlement transaction event"),
        );
    },
    registerMetrics(registry: Registry) {
      counter = new Counter({
        name: SETTLEMENT_TRANSACTIONS_METRIC,
        help: "Settlement transactions the chain lost, by what became of them (dropped, resent, landed, reverted, lost, filled).",
        labelNames: ["event"],
        registers: [registry],
      });
      for (const event of ["dropped", "resent", "landed", "reverted", "lost", "filled"]) {
        counter.inc({ event }, counts.get(event) ?? 0);
      }
    },
    flush: () => writes,
  };
}

/**
 * The journal of the in-process settler (local and self modes), for createPaymentBackend; none in
 * facilitator mode. `close` waits for its last writes (before the store closes).
 */
export function journalSettlements(
  store: Store,
  log: Logger,
  inProcess: object | undefined,
): { journal?: SettlementJournal; registerMetrics(registry: Registry): void; close(): Promise<void> } {
  if (!inProcess) return { registerMetrics: () => {}, close: async () => {} };
  const journal = createStoreJournal(store, log.child({ component: "settler" }));
  return {
    journal,
    registerMetrics: (registry) => journal.registerMetrics(registry),
    close: () => journal.flush(),
  };
}
