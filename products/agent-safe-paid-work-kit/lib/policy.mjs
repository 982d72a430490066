// A spend policy for an agent that pays with x402 (or any per-call payment), and the decision
// whether one payment is allowed under it, given what was already spent. No dependencies.
import { countedRecords, dayIn, foldLedger } from "./ledger.mjs";
import { signedOfferPolicyProblems } from "./signed-offers.mjs";

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
const ATOMIC = /^\d{1,30}$/;

function validTimeZone(name) {
  try {
    new Intl.DateTimeFormat("en-CA", { timeZone: name });
    return true;
  } catch {
    return false;
  }
}

function httpUrl(value) {
  try {
    return ["http:", "https:"].includes(new URL(value).protocol);
  } catch {
    return false;
  }
}

/** Checks a policy object; returns the problems as strings (empty when valid). */
export function checkPolicy(policy) {
  const problems = [];
  const need = (ok, message) => ok || problems.push(message);
  need(policy && typeof policy === "object" && !Array.isArray(policy), "the policy must be a JSON object");
  if (problems.length) return problems;
  const known = ["version", "networks", "assets", "maxPerPayment", "maxPerDay", "maxPerPayeePerDay", "payees", "blockedPayees", "hosts", "approvalAbove", "maxPaymentsPerMinute", "timeZone", "rpc", "finality", "signedOffers", "trustedOfferSigners"];
  for (const key of Object.keys(policy)) need(known.includes(key), `unknown field "${key}"`);
  need(policy.version === 1, "version must be 1");
  need(Array.isArray(policy.networks) && policy.networks.length > 0 && policy.networks.every((n) => /^eip155:\d+$/.test(n)), "networks: a non-empty list of CAIP-2 ids (eip155:8453)");
  need(Array.isArray(policy.assets) && policy.assets.length > 0 && policy.assets.every((a) => ADDRESS.test(a)), "assets: a non-empty list of token addresses");
  for (const key of ["maxPerPayment", "maxPerDay"]) need(typeof policy[key] === "string" && ATOMIC.test(policy[key]), `${key}: atomic units as a decimal string`);
  for (const key of ["maxPerPayeePerDay", "approvalAbove"]) need(policy[key] === undefined || (typeof policy[key] === "string" && ATOMIC.test(policy[key])), `${key}: atomic units as a decimal string`);
  for (const key of ["payees", "blockedPayees"]) need(policy[key] === undefined || (Array.isArray(policy[key]) && policy[key].every((a) => ADDRESS.test(a))), `${key}: a list of addresses`);
  need(policy.hosts === undefined || (Array.isArray(policy.hosts) && policy.hosts.every((h) => typeof h === "string" && h.length > 0)), "hosts: a list of host names");
  need(policy.maxPaymentsPerMinute === undefined || (Number.isInteger(policy.maxPaymentsPerMinute) && policy.maxPaymentsPerMinute > 0), "maxPaymentsPerMinute: a positive integer");
  need(policy.timeZone === undefined || (typeof policy.timeZone === "string" && validTimeZone(policy.timeZone)), `timeZone: an IANA time zone ("UTC", "Europe/Berlin"), got ${JSON.stringify(policy.timeZone)}`);
  if (policy.rpc !== undefined) {
    const rpc = policy.rpc;
    if (!rpc || typeof rpc !== "object" || Array.isArray(rpc)) need(false, 'rpc: an object { "<CAIP-2 network>": "<JSON-RPC URL>" }');
    else {
      for (const [network, url] of Object.entries(rpc)) {
        need(Array.isArray(policy.networks) && policy.networks.includes(network), `rpc: network ${network} is not in networks`);
        need(typeof url === "string" && httpUrl(url), `rpc.${network}: an http(s) URL`);
      }
    }
  }
  if (policy.finality !== undefined) {
    const finality = policy.finality;
    if (!finality || typeof finality !== "object" || Array.isArray(finality)) need(false, 'finality: an object { "<CAIP-2 network>": "finalized" | "safe" }');
    else {
      for (const [network, tag] of Object.entries(finality)) {
        need(Array.isArray(policy.networks) && policy.networks.includes(network), `finality: network ${network} is not in networks`);
        need(tag === "finalized" || tag === "safe", `finality.${network}: "finalized" or "safe", got ${JSON.stringify(tag)}`);
      }
    }
  }
  problems.push(...signedOfferPolicyProblems(policy));
  if (problems.length === 0) need(BigInt(policy.maxPerPayment) <= BigInt(policy.maxPerDay), "maxPerPayment cannot exceed maxPerDay");
  return problems;
}

const same = (a, b) => typeof a === "string" && typeof b === "string" && a.toLowerCase() === b.toLowerCase();

/** A seller's string, cut short for a message. */
const clip = (value) => {
  const text = String(value);
  return text.length <= 80 && /^[\x21-\x7e]*$/.test(text) ? text : `${JSON.stringify(text.slice(0, 80))}${text.length > 80 ? "…" : ""}`;
};

/** The checks of a payment that do not depend on the ledger (network, asset, payees, host, size). */
function staticReasons(policy, payment, { hosts = true } = {}) {
  const reasons = [];
  if (!policy.networks.includes(payment.network)) reasons.push(`network ${clip(payment.network)} is not allowed`);
  if (!policy.assets.some((a) => same(a, payment.asset))) reasons.push(`asset ${clip(payment.asset)} is not allowed`);
  if (!ADDRESS.test(String(payment.payTo))) return [...reasons, `payee ${clip(payment.payTo)} is not an address`];
  if ((policy.blockedPayees ?? []).some((a) => same(a, payment.payTo))) reasons.push(`payee ${payment.payTo} is blocked`);
  if (policy.payees && !policy.payees.some((a) => same(a, payment.payTo))) reasons.push(`payee ${payment.payTo} is not on the allow list`);
  if (policy.hosts && hosts) {
    const host = hostOf(payment.url);
    if (!host) reasons.push("hosts: the requested URL is not known, so its host cannot be checked");
    else if (!policy.hosts.includes(host)) reasons.push(`host ${host} is not allowed`);
  }
  if (BigInt(payment.amount) > BigInt(policy.maxPerPayment)) reasons.push(`amount ${payment.amount} exceeds maxPerPayment ${policy.maxPerPayment}`);
  return reasons;
}

/**
 * Whether to pay `payment` ({ network, asset, amount, payTo, url? }) now, given `spent` (ledger
 * lines or records { at, id?, network, asset, amount, payTo, state, validBefore?, expiresAt? }).
 * Counted against the day (the calendar day in the policy's `timeZone`, UTC by default): settled
 * payments, and every signature that has left and is not shown unused by the chain (see ledger.mjs
 * `counts`). Returns { decision: "allow" | "deny" | "approve", reasons }. "approve" means allowed
 * only with a human's approval. `ledgerName` names the ledger in a refusal about its contents.
 */
export function decide(policy, payment, spent = [], now = new Date(), ledgerName = "the ledger") {
  if (!ATOMIC.test(String(payment.amount))) return { decision: "deny", reasons: [`amount ${clip(payment.amount)} is not atomic units`] };
  const amount = BigInt(payment.amount);
  const reasons = staticReasons(policy, payment);
  if (!ADDRESS.test(String(payment.payTo))) return { decision: "deny", reasons };
  const timeZone = policy.timeZone ?? "UTC";
  const today = dayIn(timeZone, now);
  const records = foldLedger(spent);
  const counted = countedRecords(ledgerName, records, now).filter((e) => dayIn(timeZone, new Date(e.at)) === today);
  const spentToday = counted.reduce((sum, e) => sum + BigInt(e.amount), 0n);
  if (spentToday + amount > BigInt(policy.maxPerDay)) reasons.push(`today's spend would be ${spentToday + amount}, over maxPerDay ${policy.maxPerDay}`);
  if (policy.maxPerPayeePerDay) {
    const toPayee = counted.filter((e) => same(e.payTo, payment.payTo)).reduce((sum, e) => sum + BigInt(e.amount), 0n);
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

/**
 * The offered entry to sign: the cheapest of those the whole policy allows now (network, asset,
 * payee, maxPerPayment, and the day's and the payee's limits given `spent`), alone, so that the
 * client cannot pick another; when none is allowed, the seller's first, so that the refusal names
 * it. (The host is the same for every entry of one answer: it is checked before signing.) The
 * guard decides again, under the lock, on the entry actually about to be signed.
 */
export function rankRequirements(policy, requirements, spent = [], now = new Date(), version) {
  const ranked = [];
  for (const r of requirements) {
    const payment = paymentOf(r, undefined, version);
    let decision;
    try {
      decision = ATOMIC.test(payment.amount) ? decide(policy, payment, spent, now) : { decision: "deny" };
    } catch {
      decision = { decision: staticReasons(policy, payment, { hosts: false }).length === 0 ? "allow" : "deny" }; // an unreadable ledger is refused under the lock
    }
    if (decision.decision !== "deny") ranked.push({ r, amount: BigInt(payment.amount), approve: decision.decision === "approve" });
  }
  ranked.sort((a, b) => (a.approve !== b.approve ? (a.approve ? 1 : -1) : a.amount < b.amount ? -1 : a.amount > b.amount ? 1 : 0));
  return ranked.length > 0 ? [ranked[0].r] : requirements.slice(0, 1);
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

/**
 * The payment a requirement (x402 v2 `accepts[i]` with `amount`, or v1 with `maxAmountRequired`)
 * asks for: the amount the client of that `version` signs (when the version is not known, v2's
 * `amount`, else `maxAmountRequired`).
 */
export function paymentOf(requirements, url, version) {
  const network = V1_NETWORKS[requirements.network] ?? requirements.network;
  const amount = version === 1 ? requirements.maxAmountRequired : version === 2 ? requirements.amount : (requirements.amount ?? requirements.maxAmountRequired);
  return { network, asset: requirements.asset, amount: String(amount), payTo: requirements.payTo, url };
}

/** The x402 terms of a 402 answer: the PAYMENT-REQUIRED header (base64 JSON) or the JSON body (v1); the entry a guard would pick. */
export function termsFrom402(headerValue, body, policy) {
  const required = headerValue ? JSON.parse(Buffer.from(headerValue, "base64").toString("utf8")) : body;
  if (!required || !Array.isArray(required.accepts) || required.accepts.length === 0) throw new Error("no x402 payment terms found");
  const url = required.resource?.url;
  const [first] = policy ? rankRequirements(policy, required.accepts, [], new Date(), required.x402Version) : required.accepts;
  return { ...first, url };
}
