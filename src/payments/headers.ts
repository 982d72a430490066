/**
 * The header names of a paid call, in one leaf module: the gate, the HTTP app and the products read them
 * from here, so nothing outside payments has to import the gate for a name.
 */

/** x402 v2: the client's signed payment. */
export const PAYMENT_SIGNATURE_HEADER = "PAYMENT-SIGNATURE";
/** x402 v2: the terms a 402 carries. */
export const PAYMENT_REQUIRED_HEADER = "PAYMENT-REQUIRED";
/** x402 v2: the settlement receipt a paid answer carries. */
export const PAYMENT_RESPONSE_HEADER = "PAYMENT-RESPONSE";
/** x402 v1: the client's signed payment (v1 clients: x402-fetch, x402-axios). */
export const X_PAYMENT_HEADER = "X-PAYMENT";
/** x402 v1: the settlement receipt a paid answer carries. */
export const X_PAYMENT_RESPONSE_HEADER = "X-PAYMENT-RESPONSE";
/** A secret per sold download, sent with its first answer: whoever resumes it must present it (see replay-policy.ts). */
export const DOWNLOAD_TOKEN_HEADER = "x-download-token";
