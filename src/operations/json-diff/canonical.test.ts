import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { randomJson, seededRandom } from "../../../test/helpers/random-json.ts";
import { canonicalJson } from "../../canonical-json.ts";
import { CanonicalWriter, canonicalHash, canonicalText, type Json } from "./canonical.ts";

const fromBits = (hex: string) => {
  const view = new DataView(new ArrayBuffer(8));
  view.setBigUint64(0, BigInt(`0x${hex}`));
  return view.getFloat64(0);
};

describe("canonicalText (RFC 8785)", () => {
  it("reproduces the example of RFC 8785 section 3.2.2", () => {
    const input = String.raw`{
      "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
      "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
      "literals": [null, true, false]
    }`;
    expect(canonicalText(JSON.parse(input))).toBe(
      String.raw`{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
    );
  });

  it("sorts members by UTF-16 code units (RFC 8785 section 3.2.3)", () => {
    const input = JSON.parse(
      String.raw`{"\u20ac":"Euro Sign","\r":"Carriage Return","\ufb33":"Hebrew Letter Dalet With Dagesh","1":"One","\ud83d\ude00":"Emoji: Grinning Face","\u0080":"Control","\u00f6":"Latin Small Letter O With Diaeresis"}`,
    );
    const keys = Object.keys(JSON.parse(canonicalText(input)));
    // Object.keys lists the integer-like "1" first, so compare the order in the text instead.
    expect(keys.sort()).toEqual(["\r", "1", "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"]);
    const text = canonicalText(input);
    const positions = ["\\r", '"1"', "\u0080", "\u00f6", "\u20ac", "\ud83d\ude00", "\ufb33"].map((k) =>
      text.indexOf(k),
    );
    expect(positions).toEqual([...positions].sort((a, b) => a - b));
    expect(text).toBe(canonicalJson(input));
  });

  it("writes numbers in their ECMAScript shortest form (RFC 8785 section 3.2.2.3 samples)", () => {
    const samples: [string, string][] = [
      ["0000000000000000", "0"],
      ["8000000000000000", "0"],
      ["0000000000000001", "5e-324"],
      ["8000000000000001", "-5e-324"],
      ["7fefffffffffffff", "1.7976931348623157e+308"],
      ["4340000000000000", "9007199254740992"],
      ["c340000000000000", "-9007199254740992"],
      ["4430000000000000", "295147905179352830000"],
      ["44b52d02c7e14af5", "9.999999999999997e+22"],
      ["44b52d02c7e14af6", "1e+23"],
      ["444b1ae4d6e2ef50", "1e+21"],
      ["444b1ae4d6e2ef4f", "999999999999999900000"],
      ["3eb0c6f7a0b5ed8d", "0.000001"],
      ["3eb0c6f7a0b5ed8c", "9.999999999999997e-7"],
      ["41b3de4355555553", "333333333.3333332"],
      ["becbf647612f3696", "-0.0000033333333333333333"],
      ["43143ff3c1cb0959", "1424953923781206.2"],
    ];
    for (const [bits, text] of samples) expect(canonicalText(fromBits(bits)), bits).toBe(text);
    for (const n of [0, 7, 9999, 10000, 123456789, -1, -9999, 0.5, 1e-7, 4294967296]) {
      expect(canonicalText(n)).toBe(JSON.stringify(n));
    }
  });

  it("escapes strings exactly as JSON.stringify does and writes UTF-8", () => {
    const text = '\u0000\u0001\u001f\b\t\n\f\r"\\/\u007f\u0080\u00e9\u2028\u2029\uffff😀';
    expect(canonicalText(text)).toBe(JSON.stringify(text));
    const writer = new CanonicalWriter();
    writer.value(["é", "😀"]);
    expect(Buffer.from(writer.bytes()).toString("hex")).toBe(
      Buffer.from('["é","😀"]', "utf8").toString("hex"),
    );
  });

  it("refuses a lone surrogate (the request schema rejects it first)", () => {
    expect(() => canonicalText("\ud800")).toThrow(TypeError);
    expect(() => canonicalText("a\udc00")).toThrow(TypeError);
    expect(() => canonicalText("\ud800x")).toThrow(TypeError);
  });

  it("grows its buffer for long strings and many values", () => {
    const long = "x".repeat(300_000) + "é".repeat(100_000);
    const value = { long, list: Array.from({ length: 50_000 }, (_, i) => i) };
    expect(canonicalText(value)).toBe(canonicalJson(value));
  });

  it("agrees with the canonicalize package on random documents, whatever their key order", () => {
    for (let seed = 1; seed <= 300; seed++) {
      const random = seededRandom(seed);
      const value = randomJson(random, { maxDepth: 5, maxWidth: 6, trickyKeys: true });
      expect(canonicalText(value)).toBe(canonicalJson(value));
      expect(canonicalHash(value)).toBe(
        `sha256:${createHash("sha256").update(canonicalJson(value), "utf8").digest("hex")}`,
      );
    }
  });

  it("treats every member name as data (__proto__, constructor, integer-like names)", () => {
    const value = JSON.parse('{"__proto__":[1],"constructor":{},"10":1,"9":2,"":3}') as Json;
    expect(canonicalText(value)).toBe('{"":3,"10":1,"9":2,"__proto__":[1],"constructor":{}}');
  });
});
