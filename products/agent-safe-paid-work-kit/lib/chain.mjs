// What the chain says about a signed EIP-3009 authorization (USDC's transferWithAuthorization):
// used, or unused for good. Plain JSON-RPC over fetch; no dependencies.
//
// "Unused" is final only once the chain itself is past validBefore: the token checks
// `block.timestamp < validBefore`, and a chain whose latest block is older than our clock can still
// include the transfer. So the answer is read at one block, and that block's time decides.
import { appendEntry, foldLedger, readLedger, repairLedger } from "./ledger.mjs";
import { withLedgerLock } from "./lock.mjs";

const AUTHORIZATION_STATE = "0xe94a0102"; // authorizationState(address,bytes32)
const EIP3009_NONCE = /^0x[0-9a-fA-F]{64}$/;
const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

async function rpc(url, method, params, timeoutMs) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  if (!response.ok) throw new Error(`${method}: HTTP ${response.status}`);
  const body = await response.json();
  if (body.error) throw new Error(`${method}: ${body.error.message ?? JSON.stringify(body.error)}`);
  return body.result;
}

/**
 * { state: "used" | "unused" | "pending", block } for the authorization (asset, payer, nonce,
 * validBefore) on the chain behind `rpcUrl`. "pending": unused, but the chain's latest block is
 * still before validBefore, so it can still be used. Throws when the chain cannot be asked or the
 * record is not an EIP-3009 authorization (Permit2 nonces are not looked up: they stay counted).
 */
export async function authorizationStatus(rpcUrl, { asset, payer, nonce, validBefore }, { timeoutMs = 10_000 } = {}) {
  if (!EIP3009_NONCE.test(String(nonce)) || !ADDRESS.test(String(asset)) || !ADDRESS.test(String(payer))) {
    throw new Error("not an EIP-3009 authorization (token, payer, bytes32 nonce)");
  }
  const block = await rpc(rpcUrl, "eth_getBlockByNumber", ["latest", false], timeoutMs);
  if (!block?.number || !block.timestamp) throw new Error("eth_getBlockByNumber: no latest block");
  const data = `${AUTHORIZATION_STATE}${payer.slice(2).toLowerCase().padStart(64, "0")}${nonce.slice(2).toLowerCase()}`;
  const result = await rpc(rpcUrl, "eth_call", [{ to: asset, data }, block.number], timeoutMs);
  if (typeof result !== "string" || !/^0x[0-9a-fA-F]*$/.test(result) || result.length < 3) throw new Error(`authorizationState: unexpected answer ${JSON.stringify(result)}`);
  const number = BigInt(block.number).toString();
  if (BigInt(result) !== 0n) return { state: "used", block: number };
  return { state: BigInt(block.timestamp) >= BigInt(validBefore) ? "unused" : "pending", block: number };
}

/**
 * Asks the chain about every authorization of the ledger whose validBefore has passed without a
 * receipt (where the policy names an RPC for its network), and records each final answer under the
 * lock: "settled" (used: the seller took it without saying so) or "expired" (unused, and can never
 * be used now). Whatever gets no answer stays as it was, and counted. Returns what it learnt.
 */
export async function resolveLapsedAuthorizations(ledgerPath, policy, { now = new Date(), lock = {}, timeoutMs } = {}) {
  const rpcUrls = policy.rpc ?? {};
  const lapsed = foldLedger(readLedger(ledgerPath)).filter(
    (r) => r.id && (r.state === "signed" || r.state === "failed") && r.nonce && r.validBefore && now.getTime() >= Number(r.validBefore) * 1000,
  );
  const answers = [];
  await Promise.all(
    lapsed.map(async (record) => {
      const url = rpcUrls[record.network];
      if (!url) return answers.push({ record, state: "unknown", reason: `no rpc for ${record.network} in the policy` });
      try {
        answers.push({ record, ...(await authorizationStatus(url, record, { timeoutMs })) });
      } catch (error) {
        answers.push({ record, state: "unknown", reason: error.message });
      }
    }),
  );
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
