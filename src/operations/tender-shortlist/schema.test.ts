import { describe, expect, it } from "vitest";
import { INVALID_FIELDS } from "../../../test/fixtures/ted/invalid-requests.ts";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { TenderShortlistRequest } from "./schema.ts";

const errors = (input: unknown) => {
  const result = TenderShortlistRequest.safeParse(input);
  return result.success ? [] : zodIssuesToFieldErrors(result.error.issues);
};

describe("the tender shortlist request", () => {
  it("is valid empty, with the defaults of SPEC.md", () => {
    expect(TenderShortlistRequest.parse({})).toEqual({ maxResults: 10, rankingMode: "bestFit" });
  });

  it("accepts every field at its limits", () => {
    const input = {
      query: "q".repeat(100),
      keywords: Array.from({ length: 10 }, (_, i) => `keyword ${i}`),
      countries: ["DEU", "AUT", "FRA", "GBR", "NOR", "CHE", "UKR"],
      cpvCodes: ["72000000", "72000000-5", "72", "7226000", "45*"],
      publishedAfter: "2026-10-01",
      publishedBefore: "2026-10-01",
      deadlineAfter: "2026-11-01",
      deadlineBefore: "2026-11-01",
      minValue: 0,
      maxResults: 30,
      rankingMode: "highestValue",
    };
    expect(TenderShortlistRequest.parse(input)).toEqual(input);
  });

  it.each(INVALID_FIELDS)("refuses %s at its pointer", (_, input, pointer) => {
    const found = errors(input);
    expect(found.map((error) => error.pointer)).toEqual([pointer]);
    expect(found[0]?.message).toBeTruthy();
  });

  it("names the country list's rule: an unknown code is not a country", () => {
    expect(errors({ countries: ["XXX"] })[0]?.message).toBe("is not an ISO 3166-1 alpha-3 country code");
  });
});
