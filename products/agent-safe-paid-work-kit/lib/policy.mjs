// A spend policy for an agent that pays with x402 (or any per-call payment), and the decision
// whether one payment is allowed under it, given what was already spent. No dependencies.
import { counts, foldLedger } from "./ledger.mjs";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ATOMIC = /^\d{1,30}$/;

/** Checks a policy object; returns the problems as strings (empty when valid). */
export function checkPolicy(policy) {
  const problems = [];
  const need = (ok, message) => ok || problems.push(message);
  need(policy && typeof policy === "object" && !Array.isArray(policy), "the policy must be a JSON object");
  if (problems.length) return problems;
  const known = ["version", "networks", "assets", "maxPerPayment", "maxPerDay", "maxPerPayeePerDay", "payees", "blockedPayees", "hosts", "approvalAbove", "maxPaymentsPerMinute"];
  for (const key of Object.keys(policy)) need(known.includes(key), `unknown field "${key}"`);
  need(policy.version === 1, "version must be 1");
  need(Array.isArray(policy.networks) && policy.networks.length > 0 && policy.networks.every((n) => /^eip155:\d+$/.test(n)), "networks: a non-empty list of CAIP-2 ids (eip155:8453)");
  need(Array.isArray(policy.assets) && policy.assets.length > 0 && policy.assets.every((a) => ADDRESS.test(a)), "assets: a non-empty list of token addresses");
  for (const key of ["maxPerPayment", "maxPerDay"]) need(typeof policy[key] === "string" && ATOMIC.test(policy[key]), `${key}: atomic units as a decimal string`);
  for (const key of ["maxPerPayeePerDay", "approvalAbove"]) need(policy[key] === undefined || (typeof policy[key] === "string" && ATOMIC.test(policy[key])), `${key}: atomic units as a decimal string`);
  for (const key of ["payees", "blockedPayees"]) need(policy[key] === undefined || (Array.isArray(policy[key]) && policy[key].every((a) => ADDRESS.test(a))), `${key}: a list of addresses`);
  need(policy.hosts === undefined || (Array.isArray(policy.hosts) && policy.hosts.every((h) => typeof h === "string" && h.length > 0)), "hosts: a list of host names");
  need(policy.maxPaymentsPerMinute === undefined || (Number.isInteger(policy.maxPaymentsPerMinute) && policy.maxPaymentsPerMinute > 0), "maxPaymentsPerMinute: a positive integer");
  if (problems.length === 0) need(BigInt(policy.maxPerPayment) <= BigInt(policy.maxPerDay), "maxPerPayment cannot exceed maxPerDay");
  return problems;
}

const same = (a, b) => a.toLowerCase() === b.toLowerCase();
const dayOf = (iso) => iso.slice(0, 10);

/**
 * Whether to pay `payment` ({ network, asset, amount, payTo, url? }) now, given `spent` (ledger
 * lines or records { at, id?, network, asset, amount, payTo, state, validBefore?, expiresAt? }).
 * Counted against the day: settled payments, and reserved, signed or failed ones whose
 * authorization can still be used (see ledger.mjs `counts`). Returns { decision: "allow" | "deny"
 * | "approve", reasons }. "approve" means allowed only with a human's approval.
 */
export function decide(policy, payment, spent = [], now = new Date()) {
  const reasons = [];
  if (!ATOMIC.test(String(payment.amount))) return { decision: "deny", reasons: [`amount ${payment.amount} is not atomic units`] };
  const amount = BigInt(payment.amount);
  if (!policy.networks.includes(payment.network)) reasons.push(`network ${payment.network} is not allowed`);
  if (!policy.assets.some((a) => same(a, payment.asset ?? ""))) reasons.push(`asset ${payment.asset} is not allowed`);
  if ((policy.blockedPayees ?? []).some((a) => same(a, payment.payTo ?? ""))) reasons.push(`payee ${payment.payTo} is blocked`);
  if (policy.payees && !policy.payees.some((a) => same(a, payment.payTo ?? ""))) reasons.push(`payee ${payment.payTo} is not on the allow list`);
  if (policy.hosts) {
    const host = hostOf(payment.url);
    if (!host) reasons.push("hosts: the requested URL is not known, so its host cannot be checked");
    else if (!policy.hosts.includes(host)) reasons.push(`host ${host} is not allowed`);
  }
  if (amount > BigInt(policy.maxPerPayment)) reasons.push(`amount ${amount} exceeds maxPerPayment ${policy.maxPerPayment}`);
  const today = dayOf(now.toISOString());
  const records = foldLedger(spent);
  const counted = records.filter((e) => dayOf(String(e.at)) === today && counts(e, now));
  const spentToday = counted.reduce((sum, e) => sum + BigInt(e.amount), 0n);
  if (spentToday + amount > BigInt(policy.maxPerDay)) reasons.push(`today's spend would be ${spentToday + amount}, over maxPerDay ${policy.maxPerDay}`);
  if (policy.maxPerPayeePerDay) {
    const toPayee = counted.filter((e) => same(e.payTo, payment.payTo ?? "")).reduce((sum, e) => sum + BigInt(e.amount), 0n);
    if (toPayee + amount > BigInt(policy.maxPerPayeePerDay)) reasons.push(`today's spend to ${payment.payTo} would be ${toPayee + amount}, over maxPerPayeePerDay ${policy.maxPerPayeePerDay}`);
  }
  if (policy.maxPaymentsPerMinute) {
    const recent = records.filter((e) => e.state !== "released" && now.getTime() - Date.parse(e.at) < 60_000).length;
    if (recent >= policy.maxPaymentsPerMinute) reasons.push(`${recent} payments in the last minute (maxPaymentsPerMinute ${policy.maxPaymentsPerMinute})`);
  }
  if (reasons.length > 0) return { decision: "deny", reasons };
  if (policy.approvalAbove && amount > BigInt(policy.approvalAbove)) {
    return { decision: "approve", reasons: [`amount ${amount} is above approvalAbove ${policy.approvalAbove}: ask a human`] };
  }
  return { decision: "allow", reasons: [] };
}

function hostOf(url) {
  try {
    return url ? new URL(url).hostname : undefined;
  } catch {
    return undefined;
  }
}

/** x402 version 1 network names, as CAIP-2 ids (the policy lists CAIP-2 ids). */
export const V1_NETWORKS = { base: "eip155:8453", "base-sepolia": "eip155:84532", ethereum: "eip155:1", sepolia: "eip155:11155111", polygon: "eip155:137", "polygon-amoy": "eip155:80002", avalanche: "eip155:43114", "avalanche-fuji": "eip155:43113" };

/** The payment a requirement (x402 v2 `accepts[i]`, or v1 with `maxAmountRequired`) asks for. */
export function paymentOf(requirements, url) {
  const network = V1_NETWORKS[requirements.network] ?? requirements.network;
  return { network, asset: requirements.asset, amount: String(requirements.amount ?? requirements.maxAmountRequired), payTo: requirements.payTo, url };
}

/** The x402 v2 terms of a 402 answer: the PAYMENT-REQUIRED header (base64 JSON) or the JSON body. */
export function termsFrom402(headerValue, body) {
  const required = headerValue ? JSON.parse(Buffer.from(headerValue, "base64").toString("utf8")) : body;
  if (!required || !Array.isArray(required.accepts) || required.accepts.length === 0) throw new Error("no x402 payment terms found");
  return { ...required.accepts[0], url: required.resource?.url };
}
