import assert from "node:assert/strict";
import { test } from "node:test";
import { parseCsv, parseCsvRows, toCsv } from "../lib/csv.mjs";

test("quoted fields keep delimiters, quotes and newlines", () => {
  assert.deepEqual(parseCsvRows('a,"b,c","d""e","f\r\ng"\r\n'), [["a", "b,c", 'd"e', "f\r\ng"]]);
});
test("a BOM and LF line ends are accepted", () => {
  assert.deepEqual(parseCsv("\ufeffx,y\n1,2\n").records, [{ x: "1", y: "2" }]);
});
test("ragged rows and duplicate headers are reported", () => {
  const { problems } = parseCsv("a,a\n1\n");
  assert.deepEqual(problems.map((p) => p.message), ['duplicate column name "a"', "1 fields, the header has 2"]);
});
test("an unterminated quote is an error", () => {
  assert.throws(() => parseCsvRows('a,"b\n'), /unterminated/);
});
test("serialising and parsing round-trips", () => {
  const records = [{ a: "x,y", b: 'say "hi"', c: " padded " }, { a: null, b: 3, c: "" }];
  const back = parseCsv(toCsv(records)).records;
  assert.deepEqual(back, [{ a: "x,y", b: 'say "hi"', c: " padded " }, { a: "", b: "3", c: "" }]);
});
