// The kit's package entry point: `import { guardClient } from "agent-safe-paid-work-kit"`.
export { createBudgetGuard, guardClient, PaymentDenied, signedTerms } from "./budget-guard.mjs";
export { appendEntry, auditLedger, counts, foldLedger, LEDGER_FIELDS, openAuthorizations, readLedger, STATES, summarise } from "./ledger.mjs";
export { LockTimeout, withLedgerLock } from "./lock.mjs";
export { checkPolicy, decide, paymentOf, termsFrom402, V1_NETWORKS } from "./policy.mjs";
export { SECRET_RULES, scanSecrets } from "./secrets.mjs";
