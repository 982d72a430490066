// The kit's package entry point: `import { guardClient, recordReceipts } from "agent-safe-paid-work-kit"`.
export { createBudgetGuard, guardClient, PaymentDenied, recordReceipts, signedTerms } from "./budget-guard.mjs";
export { authorizationStatus, resolveLapsedAuthorizations } from "./chain.mjs";
export { appendEntry, auditLedger, counts, dayIn, foldLedger, LEDGER_FIELDS, LedgerError, openAuthorizations, readLedger, repairLedger, STATES, summarise, unknownAuthorizations } from "./ledger.mjs";
export { LockTimeout, withLedgerLock } from "./lock.mjs";
export { checkPolicy, decide, paymentOf, rankRequirements, termsFrom402, V1_NETWORKS } from "./policy.mjs";
export { SECRET_RULES, scanSecrets } from "./secrets.mjs";
export { checkSignedOffer, OFFER_RECEIPT_PACKAGE, SIGNED_OFFER_MODES } from "./signed-offers.mjs";
