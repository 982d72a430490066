// What the chain says about a signed EIP-3009 authorization (USDC's transferWithAuthorization):
// used, or unused for good. Plain JSON-RPC over fetch; no dependencies.
//
// "Unused" is final only at a block that cannot be replaced and whose own time is past validBefore:
// the token checks `block.timestamp < validBefore`, and a head that a reorganisation replaces can be
// followed by blocks that include the transfer. So the answer is read at the block the policy trusts
// as final (`finality`: the "finalized" tag by default, or "safe"), and that block's time decides.
// The RPC must also be the policy's network: it is asked its eth_chainId once per process.
import { appendEntry, dayIn, foldLedger, readLedger, repairLedger } from "./ledger.mjs";
import { withLedgerLock } from "./lock.mjs";

const AUTHORIZATION_STATE = "0xe94a0102"; // authorizationState(address,bytes32)
const EIP3009_NONCE = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;
export const FINALITY_TAGS = ["finalized", "safe"];
export const DEFAULT_FINALITY = "finalized";

async function rpc(url, method, params, signal) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal,
  });
  if (!response.ok) throw new Error(`${method}: HTTP ${response.status}`);
  const body = await response.json();
  if (body.error) throw new Error(`${method}: ${String(body.error.message ?? JSON.stringify(body.error)).slice(0, 200)}`);
  return body.result;
}

// url -> Promise of its chain id (decimal string); a failed question is asked again next time.
const chainIds = new Map();
async function checkChainId(rpcUrl, network, signal) {
  let answer = chainIds.get(rpcUrl);
  if (!answer) {
    answer = rpc(rpcUrl, "eth_chainId", [], signal).then((id) => {
      if (typeof id !== "string" || !/^0x[0-9a-fA-F]{1,16}$/.test(id)) throw new Error(`eth_chainId: unexpected answer ${JSON.stringify(id).slice(0, 80)}`);
      return BigInt(id).toString();
    });
    chainIds.set(rpcUrl, answer);
    answer.catch(() => chainIds.delete(rpcUrl));
  }
  const id = await answer;
  const wanted = String(network).split(":")[1];
  if (id !== wanted) throw new Error(`the policy's RPC for ${network} is chain ${id} (eth_chainId), not ${wanted}: its answers are not trusted`);
}

/**
 * { state: "used" | "unused" | "pending", block } for the authorization (asset, payer, nonce,
 * validBefore, network) on the chain behind `rpcUrl`, read at the `finality` block ("finalized" or
 * "safe"). "pending": unused, but that block is still before validBefore, so it can still be used.
 * Throws when the chain cannot be asked within `timeoutMs` (or before `signal` aborts), is another
 * chain than `network`, or the record is not an EIP-3009 authorization (Permit2 nonces are not
 * looked up: they stay counted).
 */
export async function authorizationStatus(rpcUrl, { asset, payer, nonce, validBefore, network }, { timeoutMs = 5_000, signal = AbortSignal.timeout(timeoutMs), finality = DEFAULT_FINALITY } = {}) {
  if (!EIP3009_NONCE.test(String(nonce)) || !ADDRESS.test(String(asset)) || !ADDRESS.test(String(payer))) {
    throw new Error("not an EIP-3009 authorization (token, payer, bytes32 nonce)");
  }
  if (!FINALITY_TAGS.includes(finality)) throw new Error(`finality ${JSON.stringify(finality)} is not one of ${FINALITY_TAGS.join(", ")}`);
  if (!/^eip155:\d+$/.test(String(network))) throw new Error(`network ${JSON.stringify(network)} is not a CAIP-2 eip155 id`);
  await checkChainId(rpcUrl, network, signal);
  const block = await rpc(rpcUrl, "eth_getBlockByNumber", [finality, false], signal);
  if (!block?.number || !block.timestamp) throw new Error(`eth_getBlockByNumber: no "${finality}" block`);
  const data = `${AUTHORIZATION_STATE}${payer.slice(2).toLowerCase().padStart(64, "0")}${nonce.slice(2).toLowerCase()}`;
  const result = await rpc(rpcUrl, "eth_call", [{ to: asset, data }, block.number], signal);
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]{1,64}$/.test(result)) throw new Error(`authorizationState: unexpected answer ${JSON.stringify(result).slice(0, 80)}`);
  const number = BigInt(block.number).toString();
  if (BigInt(result) !== 0n) return { state: "used", block: number };
  return { state: BigInt(block.timestamp) >= BigInt(validBefore) ? "unused" : "pending", block: number };
}

// When each unanswered authorization (by ledger and id), and each RPC that failed (by URL), was last
// asked, so that a chain that does not answer is asked again later, not before every payment.
const lookups = new Map();
const RETRY_MS = 5_000;
const MAX_RETRY_MS = 10 * 60_000;

function due(key, at) {
  const last = lookups.get(key);
  return !last || at >= last.next;
}
function remember(key, at, answered) {
  const failures = answered ? 0 : (lookups.get(key)?.failures ?? 0) + 1;
  lookups.set(key, { failures, next: at + Math.min(MAX_RETRY_MS, RETRY_MS * 2 ** Math.max(0, failures - 1)) });
}

/** Runs `task` over `items`, at most `limit` at once. */
async function eachLimited(items, limit, task) {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await task(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

/**
 * Asks the chain about the authorizations of the ledger whose validBefore has passed without a
 * receipt and that still count toward a limit (today's, in the policy's time zone), where the policy
 * names an RPC for their network, and records each final answer under the lock: "settled" (used: the
 * seller took it without saying so) or "expired" (unused at a final block past validBefore).
 * Whatever gets no answer stays as it was, and counted. Each record is asked about again only after
 * a back-off (per process), at most `maxLookups` per call and `concurrency` at once, all of them
 * within `timeoutMs` (a chain that hangs delays a payment by that much, then backs off). `all: true` (the ledger script) asks about every day's and ignores the
 * back-off. Returns what it learnt.
 */
export async function resolveLapsedAuthorizations(
  ledgerPath,
  policy,
  { now = new Date(), lock = {}, timeoutMs = 5_000, records, all = false, concurrency = 4, maxLookups = 8 } = {},
) {
  const rpcUrls = policy.rpc ?? {};
  const finality = policy.finality ?? {};
  const timeZone = policy.timeZone ?? "UTC";
  const today = dayIn(timeZone, now);
  const at = now.getTime();
  const key = (record) => `${ledgerPath}\u0000${record.id}`;
  const lapsed = (records ?? foldLedger(readLedger(ledgerPath))).filter(
    (r) =>
      r.id &&
      (r.state === "signed" || r.state === "failed") &&
      r.nonce &&
      r.validBefore &&
      at >= Number(r.validBefore) * 1000 &&
      (all || (dayIn(timeZone, new Date(r.at)) === today && due(key(r), at))),
  );
  const asked = all ? lapsed : lapsed.slice(0, maxLookups);
  const signal = AbortSignal.timeout(timeoutMs);
  const answers = lapsed.slice(asked.length).map((record) => ({ record, state: "unknown", reason: "not asked yet (back-off)" }));
  await eachLimited(asked, concurrency, async (record) => {
    const url = rpcUrls[record.network];
    if (!url) return answers.push({ record, state: "unknown", reason: `no rpc for ${record.network} in the policy` });
    if (!all && !due(url, at)) return answers.push({ record, state: "unknown", reason: `the RPC for ${record.network} failed recently: asked again later` });
    try {
      const answer = await authorizationStatus(url, record, { signal, finality: finality[record.network] ?? DEFAULT_FINALITY });
      remember(key(record), at, answer.state !== "pending");
      lookups.delete(url);
      answers.push({ record, ...answer });
    } catch (error) {
      remember(key(record), at, false);
      if (signal.aborted || !/^not an EIP-3009/.test(error.message)) remember(url, at, false);
      answers.push({ record, state: "unknown", reason: String(error.message).slice(0, 300) });
    }
  });
  const final = answers.filter((a) => a.state === "used" || a.state === "unused");
  if (final.length > 0) {
    await withLedgerLock(
      ledgerPath,
      () => {
        repairLedger(ledgerPath);
        const current = new Map(foldLedger(readLedger(ledgerPath)).map((r) => [r.id, r]));
        const at = now.toISOString();
        for (const answer of final) {
          const record = current.get(answer.record.id);
          if (!record || (record.state !== "signed" && record.state !== "failed")) continue; // a receipt came meanwhile
          if (answer.state === "used") {
            appendEntry(ledgerPath, { at, id: record.id, state: "settled", chainState: "used", block: answer.block, reason: "no receipt: the chain shows the authorization used" });
          } else {
            appendEntry(ledgerPath, { at, id: record.id, state: "expired", chainState: "unused", block: answer.block, reason: "the chain shows the authorization unused after validBefore" });
          }
        }
      },
      lock,
    );
  }
  return answers.map(({ record, state, block, reason }) => ({ id: record.id, nonce: record.nonce, state, block, reason }));
}
