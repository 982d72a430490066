// Generated CSV read in pieces of every size must give the rows it was written from. The cases come
// from a seeded generator (no dependency, so the test runs from the unpacked archive): the seed is
// printed, and CSV_KIT_SEED=<seed> replays a run; CSV_KIT_CASES=<n> runs more cases.
import assert from "node:assert/strict";
import { test } from "node:test";
import { CsvParser, parseCsvRows } from "../lib/csv.mjs";

const SEED = Number(process.env.CSV_KIT_SEED ?? Math.floor(Math.random() * 2 ** 32));
const CASES = Number(process.env.CSV_KIT_CASES ?? 3000);

/** mulberry32: a small seeded generator, so a failing case can be replayed from its seed. */
function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}

/** What a cell is made of: separators, quotes, line ends, spaces, 2-, 3- and 4-byte UTF-8 (an astral pair), a BOM. */
const PIECES = ["a", "b", "1", ",", ";", '"', '""', "\r", "\n", "\r\n", " ", "\t", "é", "€", "𝄞", "😀", "\ufeff", "x y"];

/** A generated case: rows (no ragged row) and the CSV text that holds them. */
export function generateCase(next, delimiter = ",") {
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

/** The rows of `text` pushed in the given pieces. */
function parsePieces(pieces, delimiter) {
  const rows = [];
  const parser = new CsvParser({ delimiter, onRow: (cells) => rows.push(cells) });
  for (const piece of pieces) parser.push(piece);
  parser.end();
  return rows;
}

/** Random cut points (some cases in one-character pieces), at least one cut. */
function randomPieces(text, next) {
  if (next() < 0.2) return [...text].length === text.length ? text.split("") : Array.from(text, (c) => c);
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
    assert.deepEqual(parseCsvRows(text, { delimiter }), rows, `one piece, ${where}`);
    const pieces = randomPieces(text, next);
    assert.deepEqual(parsePieces(pieces, delimiter), rows, `pieces ${JSON.stringify(pieces)}, ${where}`);
    assert.deepEqual(parsePieces(text.split(""), delimiter), rows, `one UTF-16 unit at a time, ${where}`);
    if (text.length <= 40) {
      for (let cut = 1; cut < text.length; cut++) {
        const two = [text.slice(0, cut), text.slice(cut)];
        assert.deepEqual(parsePieces(two, delimiter), rows, `cut at ${cut}, ${where}`);
      }
    }
  }
});

test("the issue's case: a quoted field that is not the first of its record, cut in two", () => {
  assert.deepEqual(parsePieces(['a,b,c\r\n1,2,"he', 'llo"\r\n'], ","), [["a", "b", "c"], ["1", "2", "hello"]]);
});
