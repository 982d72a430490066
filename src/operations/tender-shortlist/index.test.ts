import { describe, expect, it } from "vitest";
import { readFixture } from "../../../test/fixtures/ted/stand-in.ts";
import { buildExpertQuery } from "./expert-query.ts";
import { tenderShortlist, tenderShortlistGet } from "./index.ts";
import { normalizeNotice } from "./normalize.ts";
import { TenderShortlistRequest, TenderShortlistResponse } from "./schema.ts";
import { buildShortlist } from "./shortlist.ts";

describe("the tender-shortlist registry entries", () => {
  it("publish an example that is the real answer for the recorded Austrian notices (fixture 03)", () => {
    const { input, output } = tenderShortlist.example;
    const parsed = TenderShortlistRequest.parse(input);
    const notices = readFixture("search-response-03.json").pages[0]?.notices.map(normalizeNotice) ?? [];
    const answer = buildShortlist(
      { query: buildExpertQuery(parsed), pages: 1, notices },
      parsed,
      new Date(String((output as { generatedAt: string }).generatedAt)),
    );
    expect(answer).toEqual(output);
    expect(TenderShortlistResponse.parse(output)).toEqual(output);
  });

  it("POST and GET are one operation: same price, schemas and example", () => {
    for (const key of ["priceUsd", "input", "output", "example", "start", "path"] as const) {
      expect(tenderShortlistGet[key]).toBe(tenderShortlist[key]);
    }
    expect([tenderShortlist.method, tenderShortlistGet.method]).toEqual(["POST", "GET"]);
  });
});
