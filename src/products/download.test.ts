import { describe, expect, it } from "vitest";
import { parseRange } from "./download.ts";

describe("parseRange (RFC 9110 byte ranges, one range)", () => {
  it.each([
    ["bytes=0-99", { start: 0, end: 99 }],
    ["bytes=100-", { start: 100, end: 999 }],
    ["bytes=-10", { start: 990, end: 999 }],
    ["bytes=-5000", { start: 0, end: 999 }],
    ["bytes=990-5000", { start: 990, end: 999 }],
    [" bytes=1-1 ", { start: 1, end: 1 }],
  ])("%s of 1000 bytes", (header, range) => {
    expect(parseRange(header, 1000)).toEqual(range);
  });
  it.each(["bytes=1000-", "bytes=5000-6000", "bytes=-0"])("%s of 1000 bytes is unsatisfiable", (header) => {
    expect(parseRange(header, 1000)).toBe("unsatisfiable");
  });
  it.each([null, "bytes=9-5", "bytes=0-1,5-9", "items=0-1", "bytes=-", "bytes=a-b", "bytes 0-1"])(
    "%s is ignored (the whole file)",
    (header) => {
      expect(parseRange(header, 1000)).toBeUndefined();
    },
  );
  it("any range of an empty file is unsatisfiable", () => {
    expect(parseRange("bytes=0-", 0)).toBe("unsatisfiable");
    expect(parseRange("bytes=-1", 0)).toBe("unsatisfiable");
  });
});
