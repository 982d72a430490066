import { describe, expect, it } from "vitest";
import type { SettlementTransactionRecord } from "../../store/store.ts";
import { formatUnbackedSettlements } from "./ledger-report.ts";

const tx = (overrides: Partial<SettlementTransactionRecord>): SettlementTransactionRecord => ({
  txHash: `0x${"ab".repeat(32)}`,
  account: "0xsettler",
  nonce: 7,
  kind: "call",
  state: "landed",
  resent: 1,
  detail: null,
  updatedAt: "2026-11-25T02:00:00.000Z",
  paymentKey: "eip155:8453:0xasset:0xpayer:0x01",
  paymentState: "settled",
  operationId: "json-diff",
  amount: "10000",
  ...overrides,
});

describe("the ledger's settled payments the chain does not back", () => {
  it("lists settled payments whose transaction was reverted or lost, with their sum, and nothing else", () => {
    const report = formatUnbackedSettlements([
      tx({ state: "landed" }),
      tx({ state: "lost", txHash: "0xlost", amount: "2000000", operationId: "csv-cleanup" }),
      tx({ state: "reverted", txHash: "0xreverted" }),
      tx({ state: "lost", txHash: "0xfiller", paymentKey: null, paymentState: null, amount: null }),
    ]);
    expect(report).toContain("2.010000 USDC");
    expect(report).toContain("0xlost");
    expect(report).toContain("0xreverted");
    expect(report).not.toContain("0xfiller");
    expect(report.split("\n").filter((line) => line.startsWith("2026-"))).toHaveLength(2);
  });

  it("says nothing when every settled transaction stands", () => {
    expect(formatUnbackedSettlements([tx({ state: "landed" }), tx({ state: "resent" })])).toBe("");
  });
});
