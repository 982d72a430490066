// Generated CSV read in pieces of every size must give the rows it was written from. The cases come
// from a seeded generator (no dependency, so the test runs from the unpacked archive): the seed is
// printed, and CSV_KIT_SEED=<seed> replays a run; CSV_KIT_CASES=<n> runs more cases.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CsvParser, parseCsvRows } from "../lib/csv.mjs";
import { InputDecoder } from "../lib/text.mjs";
import { random, SEED } from "./helpers.mjs";

const CASES = Number(process.env.CSV_KIT_CASES ?? 3000);

/** What a cell is made of: separators, quotes, line ends, spaces, 2-, 3- and 4-byte UTF-8 (an astral pair), a BOM. */
const PIECES = ["a", "b", "1", ",", ";", '"', '""', "\r", "\n", "\r\n", " ", "\t", "é", "€", "𝄞", "😀", "\ufeff", "x y"];

/** A generated case: rows (no ragged row) and the CSV text that holds them. */
function generateCase(next, delimiter = ",") {
  const pick = (list) => list[Math.floor(next() * list.length)];
  const columns = 1 + Math.floor(next() * 5);
  const rows = Array.from({ length: 1 + Math.floor(next() * 6) }, () =>
    Array.from({ length: columns }, () => {
      if (next() < 0.2) return "";
      return Array.from({ length: 1 + Math.floor(next() * 6) }, () => pick(PIECES)).join("");
    }),
  );
  const cell = (value) => {
    const must = value.includes(delimiter) || /["\r\n]/.test(value) || value.startsWith("\ufeff") || (columns === 1 && value === "");
    return must || next() < 0.15 ? `"${value.replaceAll('"', '""')}"` : value;
  };
  const lines = rows.map((row) => row.map(cell).join(delimiter));
  let text = next() < 0.3 ? "\ufeff" : "";
  lines.forEach((line, i) => {
    text += line;
    if (i < lines.length - 1 || next() < 0.6) text += pick(["\r\n", "\n", "\r"]);
  });
  return { rows, text, delimiter };
}

/** assert.deepEqual on what `read` returns, naming the case also when `read` throws. */
function expectRows(read, rows, where) {
  let actual;
  try {
    actual = read();
  } catch (error) {
    assert.fail(`${error.message}: ${where}`);
  }
  assert.deepEqual(actual, rows, where);
}

/** The rows of `text` pushed in the given pieces. */
function parsePieces(pieces, delimiter) {
  const rows = [];
  const parser = new CsvParser({ delimiter, onRow: (cells) => rows.push(cells) });
  for (const piece of pieces) parser.push(piece);
  parser.end();
  return rows;
}

/** Pieces cut at random points (some cases one code point at a time). */
function randomPieces(text, next) {
  if (next() < 0.2) return Array.from(text);
  const pieces = [];
  let at = 0;
  while (at < text.length) {
    const size = 1 + Math.floor(next() * Math.min(8, text.length));
    pieces.push(text.slice(at, at + size));
    at += size;
  }
  return pieces;
}

test(`generated CSV read in pieces of any size gives the rows it was written from (seed ${SEED}, ${CASES} cases)`, () => {
  console.log(`csv-chunks: seed ${SEED} (replay: CSV_KIT_SEED=${SEED}), ${CASES} cases`);
  const next = random(SEED);
  for (let n = 1; n <= CASES; n++) {
    const delimiter = next() < 0.8 ? "," : ";";
    const { rows, text } = generateCase(next, delimiter);
    const where = `case ${n} of seed ${SEED}: ${JSON.stringify(text)}`;
    expectRows(() => parseCsvRows(text, { delimiter }), rows, `one piece, ${where}`);
    const pieces = randomPieces(text, next);
    expectRows(() => parsePieces(pieces, delimiter), rows, `pieces ${JSON.stringify(pieces)}, ${where}`);
    expectRows(() => parsePieces(text.split(""), delimiter), rows, `one UTF-16 unit at a time, ${where}`);
    if (text.length <= 40) {
      for (let cut = 1; cut < text.length; cut++) {
        expectRows(() => parsePieces([text.slice(0, cut), text.slice(cut)], delimiter), rows, `cut at ${cut}, ${where}`);
      }
    }
  }
});

test("the issue's case: a quoted field that is not the first of its record, cut in two", () => {
  assert.deepEqual(parsePieces(['a,b,c\r\n1,2,"he', 'llo"\r\n'], ","), [["a", "b", "c"], ["1", "2", "hello"]]);
});

/** The rows of `bytes` cut at the given offsets, decoded as a file is (InputDecoder) and parsed. */
function parseBytes(bytes, cuts, delimiter) {
  const rows = [];
  const decoder = new InputDecoder();
  const parser = new CsvParser({ delimiter, onRow: (cells) => rows.push(cells) });
  let at = 0;
  for (const cut of [...cuts, bytes.length]) {
    parser.push(decoder.write(bytes.subarray(at, cut)));
    at = cut;
  }
  parser.push(decoder.end());
  parser.end();
  return rows;
}

/** UTF-16 with a byte order mark, little- or big-endian. */
function utf16(text, bigEndian) {
  const bytes = Buffer.from(`\ufeff${text.replace(/^\ufeff/, "")}`, "utf16le");
  return bigEndian ? bytes.swap16() : bytes;
}

test(`generated CSV as UTF-8 and UTF-16 bytes cut anywhere (inside a character, a BOM, a pair) gives its rows (seed ${SEED})`, () => {
  const next = random(SEED ^ 0x5eed);
  const cases = Math.ceil(CASES / 3);
  for (let n = 1; n <= cases; n++) {
    const { rows, text } = generateCase(next);
    const encoding = ["utf-8", "utf-8", "utf-16le", "utf-16be"][Math.floor(next() * 4)];
    const bytes = encoding === "utf-8" ? Buffer.from(text) : utf16(text, encoding === "utf-16be");
    const where = `byte case ${n} of seed ${SEED} (${encoding}): ${JSON.stringify(text)}`;
    const cuts = [];
    if (next() < 0.25) for (let at = 1; at < bytes.length; at++) cuts.push(at);
    else for (let at = 0; at < bytes.length; ) cuts.push((at += 1 + Math.floor(next() * 9)));
    const inside = cuts.filter((at) => at < bytes.length);
    expectRows(() => parseBytes(bytes, inside, ","), rows, `cuts ${inside.join(" ")}, ${where}`);
    if (bytes.length <= 48) for (let cut = 1; cut < bytes.length; cut++) expectRows(() => parseBytes(bytes, [cut], ","), rows, `cut at byte ${cut}, ${where}`);
  }
});
