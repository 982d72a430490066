import { describe, expect, it } from "vitest";
import type { AuthorizationOutcome } from "../settler/authorization-state.ts";
import {
  EXPIRY_MARGIN_SECONDS,
  type ResumeVerdict,
  resumeVerdict,
  type SettlementFacts,
  type SettlementVerdict,
  settlementVerdict,
} from "./settlement-verdict.ts";

const TX = `0x${"ab".repeat(32)}` as const;
const VALID_BEFORE = 1_000_000;
const paid: AuthorizationOutcome = { state: "paid", transaction: TX };
const consumed: AuthorizationOutcome = { state: "consumed", transaction: TX };
const unused: AuthorizationOutcome = { state: "unused" };
/** Epoch ms this many seconds after validBefore. */
const secondsPast = (seconds: number) => (VALID_BEFORE + seconds) * 1000;
const stillValid = secondsPast(-60);

describe("the settlement verdict: the token and the clock decide", () => {
  it.each<[string, Omit<SettlementFacts, "validBefore">, SettlementVerdict]>([
    [
      "paid on chain → settled with that transaction",
      { onChain: paid, nowMs: stillValid },
      { verdict: "settled", transaction: TX },
    ],
    [
      "paid on chain, even after a refusal and expiry → settled",
      { onChain: paid, refusal: "nope", refusalStands: true, nowMs: secondsPast(999) },
      { verdict: "settled", transaction: TX },
    ],
    [
      "cancelled or spent elsewhere → failed, the result withheld",
      { onChain: consumed, nowMs: stillValid },
      { verdict: "failed", cause: "consumed", transaction: TX },
    ],
    [
      "consumed without a known transaction → failed",
      { onChain: { state: "consumed" }, nowMs: stillValid },
      { verdict: "failed", cause: "consumed", transaction: undefined },
    ],
    [
      "unused, this attempt's own refusal → the refusal stands",
      { onChain: unused, refusal: "insufficient funds", refusalStands: true, nowMs: stillValid },
      { verdict: "failed", cause: "refused", refusal: "insufficient funds" },
    ],
    [
      "unused, a resumed attempt's refusal, still valid → kept open",
      { onChain: unused, refusal: "insufficient funds", nowMs: stillValid },
      { verdict: "keep-open" },
    ],
    [
      "unused, still valid (a lost receipt) → kept open",
      { onChain: unused, nowMs: stillValid },
      { verdict: "keep-open" },
    ],
    [
      "unused, past validBefore but within the clock-skew margin → kept open (a broadcast may still land)",
      { onChain: unused, nowMs: secondsPast(EXPIRY_MARGIN_SECONDS - 1) },
      { verdict: "keep-open" },
    ],
    [
      "unused, past validBefore + margin → released, nothing charged",
      { onChain: unused, nowMs: secondsPast(EXPIRY_MARGIN_SECONDS) },
      { verdict: "released", cause: "expired" },
    ],
    [
      "unused, a resumed refusal once expired → released",
      { onChain: unused, refusal: "the authorization expired", nowMs: secondsPast(3600) },
      { verdict: "released", cause: "expired" },
    ],
    [
      "no chain access, no refusal → kept open (never decided blind)",
      { onChain: undefined, nowMs: secondsPast(3600) },
      { verdict: "keep-open" },
    ],
    [
      "no chain access, a refusal → failed (the refusal is trusted)",
      { onChain: undefined, refusal: "invalid signature", nowMs: stillValid },
      { verdict: "failed", cause: "refused", refusal: "invalid signature" },
    ],
  ])("%s", (_, facts, verdict) => {
    expect(settlementVerdict({ ...facts, validBefore: VALID_BEFORE })).toEqual(verdict);
  });
});

describe("a resumed payment is settled again only while unused and valid", () => {
  it.each<[string, AuthorizationOutcome | undefined, number, ResumeVerdict]>([
    ["unused and valid", unused, stillValid, "settle"],
    ["no chain access and valid", undefined, stillValid, "settle"],
    ["paid meanwhile", paid, stillValid, "decide"],
    ["consumed meanwhile", consumed, stillValid, "decide"],
    ["unused but expired", unused, secondsPast(0), "decide"],
    ["no chain access and expired", undefined, secondsPast(1), "decide"],
  ])("%s → %s", (_, onChain, nowMs, verdict) => {
    expect(resumeVerdict({ onChain, nowMs, validBefore: VALID_BEFORE })).toBe(verdict);
  });
});
