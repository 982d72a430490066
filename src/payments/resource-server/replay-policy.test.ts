import { describe, expect, it } from "vitest";
import {
  type OwnerFacts,
  type OwnerVerdict,
  ownerVerdict,
  PRODUCT_REPLAY_WINDOW_MS,
  REPLAY_WINDOW_MS,
  type RepeatFacts,
  type RepeatVerdict,
  type ReplayFacts,
  repeatVerdict,
  replayVerdict,
} from "./replay-policy.ts";

const MIN = 60_000;
const base: ReplayFacts = {
  soldDownload: false,
  ageMs: 0,
  token: undefined,
  tokenPresented: false,
  firstCaller: false,
};
const sold: ReplayFacts = { ...base, soldDownload: true, token: "t" };

describe("what a repeat of a final payment gets", () => {
  it.each<[string, Partial<ReplayFacts>, ReturnType<typeof replayVerdict>]>([
    ["any outcome, within two minutes, to anyone with the payment and request", {}, "serve"],
    ["any outcome, after two minutes", { ageMs: REPLAY_WINDOW_MS + 1 }, "expired"],
    ["a held payment's 202, long after two minutes", { held: true, ageMs: 30 * MIN }, "serve"],
    // A settled payment is public on chain, and the 202 names the job whose id alone reads the brief paid for.
    ["a job's 202 once its payment settled, even at once", { settledJob: true, ageMs: 0 }, "expired"],
    ["a failed download (no token), after two minutes", { soldDownload: false, ageMs: 3 * MIN }, "expired"],
    // Its client was told to retry and the sweeper decided it: the retry gets what was paid for, however late.
    ["an outcome awaiting its client, an hour later", { awaitingClient: true, ageMs: 60 * MIN }, "serve"],
    [
      "a job's 202 once settled, even awaiting its client",
      { awaitingClient: true, settledJob: true },
      "expired",
    ],
  ])("%s → %s", (_, facts, verdict) => {
    expect(replayVerdict({ ...base, ...facts })).toBe(verdict);
  });

  it.each<[string, Partial<ReplayFacts>, ReturnType<typeof replayVerdict>]>([
    ["its first caller's prompt retry", { ageMs: MIN, firstCaller: true }, "serve"],
    ["someone else within two minutes, without the token", { ageMs: MIN }, "needs-token"],
    ["someone else within two minutes, with the token", { ageMs: MIN, tokenPresented: true }, "serve"],
    [
      "its first caller after two minutes, without the token",
      { ageMs: 3 * MIN, firstCaller: true },
      "needs-token",
    ],
    ["anyone within the hour, with the token", { ageMs: 59 * MIN, tokenPresented: true }, "serve"],
    // Bound to its token or first caller: a payment read from the chain never downloads it.
    [
      "someone else, awaiting its client, without the token",
      { ageMs: MIN, awaitingClient: true },
      "needs-token",
    ],
    // The sweeper settled it after its client was told to retry: that client never saw the token.
    [
      "its first caller, awaiting its client, three minutes later",
      { ageMs: 3 * MIN, awaitingClient: true, firstCaller: true },
      "serve",
    ],
    [
      "its first caller, awaiting its client, after the hour",
      { ageMs: PRODUCT_REPLAY_WINDOW_MS + 1, awaitingClient: true, firstCaller: true },
      "serve",
    ],
    [
      "someone else, awaiting its client, three minutes later, without the token",
      { ageMs: 3 * MIN, awaitingClient: true },
      "needs-token",
    ],
    [
      "anyone after the hour, even with the token",
      { ageMs: PRODUCT_REPLAY_WINDOW_MS + 1, tokenPresented: true },
      "expired",
    ],
  ])("a sold download: %s → %s", (_, facts, verdict) => {
    expect(replayVerdict({ ...sold, ...facts })).toBe(verdict);
  });
});

describe("what a repeated payment gets", () => {
  const fresh: RepeatFacts = { samePayload: true, sameRequest: true, runningHere: false };
  it.each<[string, Partial<RepeatFacts>, RepeatVerdict]>([
    [
      "another signature over the same nonce → rejected: the nonce is used",
      { samePayload: false, final: base },
      { verdict: "reject", why: "nonce-used" },
    ],
    [
      "the same payment for another request → rejected (409)",
      { sameRequest: false, final: base },
      { verdict: "reject", why: "other-request" },
    ],
    [
      "another request, even while unfinished → rejected",
      { sameRequest: false },
      { verdict: "reject", why: "other-request" },
    ],
    ["final, a prompt retry → the stored outcome", { final: base }, { verdict: "serve" }],
    [
      "final, too late → refused",
      { final: { ...base, ageMs: REPLAY_WINDOW_MS + 1 } },
      { verdict: "refuse-replay", why: "expired" },
    ],
    [
      "a sold download resumed without its token by someone else → refused",
      { final: { ...sold, ageMs: MIN } },
      { verdict: "refuse-replay", why: "needs-token" },
    ],
    ["unfinished, worked on by this instance → joins that work", { runningHere: true }, { verdict: "join" }],
    ["unfinished elsewhere → take it over (resume) or wait for its owner", {}, { verdict: "take-over" }],
  ])("%s", (_, facts, verdict) => {
    expect(repeatVerdict({ ...fresh, ...facts })).toEqual(verdict);
  });
});

describe("waiting on another attempt's payment", () => {
  const alive: OwnerFacts = {
    recorded: true,
    final: false,
    leaseLeftMs: 18_000,
    staleLeaseMs: 13_000,
    waitedTooLong: false,
    retryAfterSeconds: 5,
  };
  it.each<[string, Partial<OwnerFacts>, OwnerVerdict]>([
    ["the owner finished → its outcome", { final: true }, { verdict: "outcome" }],
    ["the payment left the ledger → take over", { recorded: false }, { verdict: "take-over" }],
    ["the lease ran out → take over", { leaseLeftMs: 0 }, { verdict: "take-over" }],
    [
      "a stale lease (not renewed) → in progress, retry when it runs out",
      { leaseLeftMs: 4_200 },
      { verdict: "in-progress", retryAfterSeconds: 5 },
    ],
    [
      "a stale lease about to end → retry in at least 1 s",
      { leaseLeftMs: 10 },
      { verdict: "in-progress", retryAfterSeconds: 1 },
    ],
    [
      "a live owner, waited too long → in progress, retry after the usual delay",
      { waitedTooLong: true },
      { verdict: "in-progress", retryAfterSeconds: 5 },
    ],
    ["a live owner → look again", {}, { verdict: "look-again" }],
  ])("%s", (_, facts, verdict) => {
    expect(ownerVerdict({ ...alive, ...facts })).toEqual(verdict);
  });
});
