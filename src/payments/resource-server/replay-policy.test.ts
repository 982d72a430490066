import { describe, expect, it } from "vitest";
import {
  PRODUCT_REPLAY_WINDOW_MS,
  REPLAY_WINDOW_MS,
  type ReplayFacts,
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
    ["a failed download (no token), after two minutes", { soldDownload: false, ageMs: 3 * MIN }, "expired"],
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
    [
      "anyone after the hour, even with the token",
      { ageMs: PRODUCT_REPLAY_WINDOW_MS + 1, tokenPresented: true },
      "expired",
    ],
  ])("a sold download: %s → %s", (_, facts, verdict) => {
    expect(replayVerdict({ ...sold, ...facts })).toBe(verdict);
  });
});
