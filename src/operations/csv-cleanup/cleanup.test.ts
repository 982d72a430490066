import { describe, expect, it } from "vitest";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { cleanupRows } from "./cleanup.ts";
import { decimalKey, ExactNumber, keepNumberLexemes } from "./exact-number.ts";
import { readCsvCleanupRequest, runCleanup } from "./read-request.ts";
import { type CsvCleanupInput, type CsvCleanupOutput, CsvCleanupRequest } from "./schema.ts";

type Cell = string | number | boolean | null;
type Row = Record<string, Cell>;

/**
 * Parses the request with the schema (so defaults apply) and runs the operation. The tests of the
 * rules below look at which rows were dropped (index, duplicateOf); how each matched is tested in
 * "how a dropped row matched".
 */
const run = (request: unknown) => {
  const output = cleanupRows(CsvCleanupRequest.parse(request));
  return {
    ...output,
    duplicates: output.duplicates.map(({ index, duplicateOf }) => ({ index, duplicateOf })),
  };
};

/** The field errors a request is rejected with; fails the test when the request is accepted. */
function fieldErrors(request: unknown) {
  const result = CsvCleanupRequest.safeParse(request);
  if (result.success) throw new Error("expected the request to be rejected, but it was accepted");
  return zodIssuesToFieldErrors(result.error.issues);
}

const CELL_MESSAGE = "a cell must be a string, number, boolean or null (objects and arrays are not allowed)";

const noDrops = (inputRows: number, trimmedValues = 0): CsvCleanupOutput["stats"] => ({
  inputRows,
  outputRows: inputRows,
  blankRowsDropped: 0,
  duplicatesDropped: 0,
  trimmedValues,
});

/** Recursively freezes a value so any in-place mutation throws (ESM code runs in strict mode). */
function deepFreeze<T>(value: T): T {
  if (value !== null && typeof value === "object") {
    for (const key of Reflect.ownKeys(value)) deepFreeze((value as Record<PropertyKey, unknown>)[key]);
    Object.freeze(value);
  }
  return value;
}

describe("cleanupRows: columns (rule 1)", () => {
  it("uses the union of keys across all rows in first-seen order and fills missing cells with null", () => {
    const output = run({
      rows: [{ a: 1, b: "x" }, { c: true, a: 2 }, { d: null, b: "y" }, { e: "late" }],
    });

    expect(output).toEqual({
      rows: [
        { a: 1, b: "x", c: null, d: null, e: null },
        { a: 2, b: null, c: true, d: null, e: null },
        { a: null, b: "y", c: null, d: null, e: null },
        { a: null, b: null, c: null, d: null, e: "late" },
      ],
      columns: ["a", "b", "c", "d", "e"],
      keyColumns: ["a", "b", "c", "d", "e"],
      stats: noDrops(4),
      duplicates: [],
    });
    // Every output row has every column, in the order of `columns`.
    for (const row of output.rows) expect(Object.keys(row)).toEqual(output.columns);
  });
});

describe("cleanupRows: trimming (rule 2)", () => {
  const rows = [
    { id: " a ", note: "\tleading tab and trailing newline\n", n: 1 },
    { id: "b", note: "\u00a0nbsp and ideographic space\u3000", n: 2 },
    { id: "c", note: "", n: 3 },
    { id: "d", note: "inner  spaces  kept", n: 4 },
  ];

  it("trims every string value by default and counts only the values that changed", () => {
    expect(run({ rows })).toEqual({
      rows: [
        { id: "a", note: "leading tab and trailing newline", n: 1 },
        { id: "b", note: "nbsp and ideographic space", n: 2 },
        { id: "c", note: "", n: 3 },
        { id: "d", note: "inner  spaces  kept", n: 4 },
      ],
      columns: ["id", "note", "n"],
      keyColumns: ["id", "note", "n"],
      stats: noDrops(4, 3),
      duplicates: [],
    });
  });

  it("leaves values untouched with trimStrings:false", () => {
    expect(run({ rows, trimStrings: false })).toEqual({
      rows,
      columns: ["id", "note", "n"],
      keyColumns: ["id", "note", "n"],
      stats: noDrops(4, 0),
      duplicates: [],
    });
  });

  it("compares trimmed key values when trimming, and untrimmed ones when not", () => {
    const request = { rows: [{ id: "k1" }, { id: "  k1  " }], keyColumns: ["id"] };

    expect(run(request)).toEqual({
      rows: [{ id: "k1" }],
      columns: ["id"],
      keyColumns: ["id"],
      stats: { inputRows: 2, outputRows: 1, blankRowsDropped: 0, duplicatesDropped: 1, trimmedValues: 1 },
      duplicates: [{ index: 1, duplicateOf: 0 }],
    });
    expect(run({ ...request, trimStrings: false })).toEqual({
      rows: [{ id: "k1" }, { id: "  k1  " }],
      columns: ["id"],
      keyColumns: ["id"],
      stats: noDrops(2, 0),
      duplicates: [],
    });
  });

  it("counts trimmed values of every input row, including rows later dropped as blank or duplicate", () => {
    // Current behaviour, pinned: trimming happens before the blank and duplicate checks, so
    // trimmedValues counts every string that changed in the input, not only in the output.
    const output = run({ rows: [{ id: "x" }, { id: " x " }, { id: "   " }], keyColumns: ["id"] });

    expect(output).toEqual({
      rows: [{ id: "x" }],
      columns: ["id"],
      keyColumns: ["id"],
      stats: { inputRows: 3, outputRows: 1, blankRowsDropped: 1, duplicatesDropped: 1, trimmedValues: 2 },
      duplicates: [{ index: 1, duplicateOf: 0 }],
    });
  });
});

describe("cleanupRows: blank rows (rule 3)", () => {
  const rows: Row[] = [
    { id: "1", name: "Ada" }, // 0 kept
    { id: "  ", name: null }, // 1 blank: whitespace and null
    {}, // 2 blank: every cell missing (null)
    { id: "", name: "\t\n" }, // 3 blank: empty and whitespace-only strings
    { id: 0, name: "" }, // 4 not blank: 0 is a value
    { id: false }, // 5 not blank: false is a value
    { name: "Grace" }, // 6 kept
  ];

  it("drops blank rows by default (null or empty after trimming) and counts them", () => {
    expect(run({ rows })).toEqual({
      rows: [
        { id: "1", name: "Ada" },
        { id: 0, name: "" },
        { id: false, name: null },
        { id: null, name: "Grace" },
      ],
      columns: ["id", "name"],
      keyColumns: ["id", "name"],
      stats: { inputRows: 7, outputRows: 4, blankRowsDropped: 3, duplicatesDropped: 0, trimmedValues: 2 },
      duplicates: [],
    });
  });

  it("still trims for the blank check when trimStrings is false, and keeps kept values untrimmed", () => {
    expect(run({ rows: [...rows, { id: " 2 ", name: " Alan " }], trimStrings: false })).toEqual({
      rows: [
        { id: "1", name: "Ada" },
        { id: 0, name: "" },
        { id: false, name: null },
        { id: null, name: "Grace" },
        { id: " 2 ", name: " Alan " },
      ],
      columns: ["id", "name"],
      keyColumns: ["id", "name"],
      stats: { inputRows: 8, outputRows: 5, blankRowsDropped: 3, duplicatesDropped: 0, trimmedValues: 0 },
      duplicates: [],
    });
  });

  it("keeps blank rows with dropBlankRows:false", () => {
    expect(run({ rows, dropBlankRows: false })).toEqual({
      rows: [
        { id: "1", name: "Ada" },
        { id: "", name: null },
        { id: null, name: null },
        { id: "", name: "" },
        { id: 0, name: "" },
        { id: false, name: null },
        { id: null, name: "Grace" },
      ],
      columns: ["id", "name"],
      keyColumns: ["id", "name"],
      stats: noDrops(7, 2),
      duplicates: [],
    });
  });

  it("keeps blank rows untouched with dropBlankRows:false and trimStrings:false", () => {
    expect(run({ rows, dropBlankRows: false, trimStrings: false })).toEqual({
      rows: [
        { id: "1", name: "Ada" },
        { id: "  ", name: null },
        { id: null, name: null },
        { id: "", name: "\t\n" },
        { id: 0, name: "" },
        { id: false, name: null },
        { id: null, name: "Grace" },
      ],
      columns: ["id", "name"],
      keyColumns: ["id", "name"],
      stats: noDrops(7, 0),
      duplicates: [],
    });
  });
});

describe("cleanupRows: deduplication (rule 4)", () => {
  it("deduplicates on keyColumns, keeps the first occurrence and input order, and reports input indices", () => {
    const output = run({
      rows: [
        { id: "A", v: 1 }, // 0
        { id: "B", v: 2 }, // 1
        { id: "", v: null }, // 2 blank: dropped before dedup, but indices stay input indices
        { id: "A", v: 3 }, // 3 duplicate of 0
        { id: "C", v: 4 }, // 4
        { id: "B", v: 5 }, // 5 duplicate of 1
        { id: "A", v: 6 }, // 6 duplicate of 0
      ],
      keyColumns: ["id"],
    });

    expect(output).toEqual({
      rows: [
        { id: "A", v: 1 },
        { id: "B", v: 2 },
        { id: "C", v: 4 },
      ],
      columns: ["id", "v"],
      keyColumns: ["id"],
      stats: { inputRows: 7, outputRows: 3, blankRowsDropped: 1, duplicatesDropped: 3, trimmedValues: 0 },
      duplicates: [
        { index: 3, duplicateOf: 0 },
        { index: 5, duplicateOf: 1 },
        { index: 6, duplicateOf: 0 },
      ],
    });
  });

  it("deduplicates on the whole row when keyColumns is absent, and reports all columns as keyColumns", () => {
    const output = run({
      rows: [
        { id: "A", v: 1 },
        { id: "A", v: 2 },
        { v: 1, id: "A" }, // same cells in another key order: duplicate of 0
        { id: "A", v: 1, extra: null }, // a missing cell equals null: duplicate of 0
        { id: "A", v: 1, extra: "x" },
      ],
    });

    expect(output).toEqual({
      rows: [
        { id: "A", v: 1, extra: null },
        { id: "A", v: 2, extra: null },
        { id: "A", v: 1, extra: "x" },
      ],
      columns: ["id", "v", "extra"],
      keyColumns: ["id", "v", "extra"],
      stats: { inputRows: 5, outputRows: 3, blankRowsDropped: 0, duplicatesDropped: 2, trimmedValues: 0 },
      duplicates: [
        { index: 2, duplicateOf: 0 },
        { index: 3, duplicateOf: 0 },
      ],
    });
  });

  it("compares composite keys on every key column, without separator collisions", () => {
    const output = run({
      rows: [
        { first: "Ada", last: "Lovelace", n: 1 },
        { first: "Ada", last: "Byron", n: 2 },
        { first: "Ada", last: "Lovelace", n: 3 }, // duplicate of 0
        { first: "a,b", last: "c", n: 4 },
        { first: "a", last: "b,c", n: 5 }, // joined with "," it would collide with row 3
        { first: 'a","b', last: "c", n: 6 },
        { first: "a", last: '"b","c', n: 7 },
      ],
      keyColumns: ["first", "last"],
    });

    expect(output.rows.map((row) => row.n)).toEqual([1, 2, 4, 5, 6, 7]);
    expect(output.keyColumns).toEqual(["first", "last"]);
    expect(output.duplicates).toEqual([{ index: 2, duplicateOf: 0 }]);
    expect(output.stats).toEqual({
      inputRows: 7,
      outputRows: 6,
      blankRowsDropped: 0,
      duplicatesDropped: 1,
      trimmedValues: 0,
    });
  });

  it("with dropBlankRows:false, blank rows take part in deduplication like any other row", () => {
    const output = run({
      rows: [{ id: "", v: null }, { id: "A" }, { id: "   " }, {}],
      keyColumns: ["id"],
      dropBlankRows: false,
    });

    expect(output).toEqual({
      rows: [
        { id: "", v: null },
        { id: "A", v: null },
        { id: null, v: null },
      ],
      columns: ["id", "v"],
      keyColumns: ["id"],
      stats: { inputRows: 4, outputRows: 3, blankRowsDropped: 0, duplicatesDropped: 1, trimmedValues: 1 },
      duplicates: [{ index: 2, duplicateOf: 0 }],
    });
  });
});

describe("cleanupRows: case and Unicode (rule 5)", () => {
  const rows = [
    { id: "ada@example.org", n: 0 },
    { id: "ADA@Example.ORG", n: 1 },
    { id: "Ada@example.org", n: 2 },
    { id: "bob@example.org", n: 3 },
  ];

  it("compares key values case-insensitively by default", () => {
    expect(run({ rows, keyColumns: ["id"] })).toEqual({
      rows: [
        { id: "ada@example.org", n: 0 },
        { id: "bob@example.org", n: 3 },
      ],
      columns: ["id", "n"],
      keyColumns: ["id"],
      stats: { inputRows: 4, outputRows: 2, blankRowsDropped: 0, duplicatesDropped: 2, trimmedValues: 0 },
      duplicates: [
        { index: 1, duplicateOf: 0 },
        { index: 2, duplicateOf: 0 },
      ],
    });
  });

  it("compares key values case-sensitively with caseInsensitiveKeys:false", () => {
    expect(run({ rows, keyColumns: ["id"], caseInsensitiveKeys: false })).toEqual({
      rows,
      columns: ["id", "n"],
      keyColumns: ["id"],
      stats: noDrops(4),
      duplicates: [],
    });
  });

  it("never folds case when keyColumns is absent: the whole row is compared as given (issue 18)", () => {
    const request = {
      rows: [
        { name: "Ada", city: "London" },
        { name: "ADA", city: "london" },
      ],
    };

    expect(run(request).duplicates).toEqual([]);
    expect(run({ ...request, caseInsensitiveKeys: false }).duplicates).toEqual([]);
    // YouTube-style ids that differ only in case are different rows.
    expect(run({ rows: [{ v: "dQw4w9WgXcQ" }, { v: "DQW4W9WGXCQ" }] }).rows).toHaveLength(2);
    // Named as key columns, they fold.
    expect(run({ ...request, keyColumns: ["name", "city"] }).duplicates).toEqual([
      { index: 1, duplicateOf: 0 },
    ]);
  });

  it('matches "Straße" and "STRASSE" case-insensitively, but not case-sensitively', () => {
    const request = {
      rows: [{ street: "Straße" }, { street: "STRASSE" }, { street: "strasse" }],
      keyColumns: ["street"],
    };

    expect(run(request)).toEqual({
      rows: [{ street: "Straße" }],
      columns: ["street"],
      keyColumns: ["street"],
      stats: { inputRows: 3, outputRows: 1, blankRowsDropped: 0, duplicatesDropped: 2, trimmedValues: 0 },
      duplicates: [
        { index: 1, duplicateOf: 0 },
        { index: 2, duplicateOf: 0 },
      ],
    });
    expect(run({ ...request, caseInsensitiveKeys: false })).toEqual({
      rows: [{ street: "Straße" }, { street: "STRASSE" }, { street: "strasse" }],
      columns: ["street"],
      keyColumns: ["street"],
      stats: noDrops(3),
      duplicates: [],
    });
  });

  it("treats NFC and NFD forms as equal in both case modes, and outputs the kept value as given", () => {
    const nfc = "caf\u00e9"; // é precomposed
    const nfd = "cafe\u0301"; // e + combining acute accent
    expect(nfc).not.toBe(nfd);
    const request = { rows: [{ name: nfd }, { name: nfc }, { name: "CAF\u00c9" }], keyColumns: ["name"] };

    expect(run(request)).toEqual({
      rows: [{ name: nfd }],
      columns: ["name"],
      keyColumns: ["name"],
      stats: { inputRows: 3, outputRows: 1, blankRowsDropped: 0, duplicatesDropped: 2, trimmedValues: 0 },
      duplicates: [
        { index: 1, duplicateOf: 0 },
        { index: 2, duplicateOf: 0 },
      ],
    });
    expect(run({ ...request, caseInsensitiveKeys: false })).toEqual({
      rows: [{ name: nfd }, { name: "CAF\u00c9" }],
      columns: ["name"],
      keyColumns: ["name"],
      stats: { inputRows: 3, outputRows: 2, blankRowsDropped: 0, duplicatesDropped: 1, trimmedValues: 0 },
      duplicates: [{ index: 1, duplicateOf: 0 }],
    });
  });

  it("handles Greek, Cyrillic and emoji values and non-ASCII column names", () => {
    const rows = [
      { ключ: "Москва", 名前: "東京", "Straße/№": 1 }, // 0
      { ключ: "МОСКВА", 名前: "x", "Straße/№": 2 }, // 1 duplicate of 0 (Cyrillic case)
      { ключ: "ΟΔΟΣ", 名前: "y", "Straße/№": 3 }, // 2
      { ключ: "οδος", 名前: "y", "Straße/№": 4 }, // 3 duplicate of 2 (final sigma ς)
      { ключ: "οδοσ", 名前: "y", "Straße/№": 5 }, // 4 duplicate of 2 (medial sigma σ)
      { ключ: "Αθήνα", 名前: "z", "Straße/№": 6 }, // 5
      { ключ: "ΑΘΉΝΑ", 名前: "z", "Straße/№": 7 }, // 6 duplicate of 5 (tonos kept in upper case)
      { ключ: "🎉 party", 名前: "🎉", "Straße/№": 8 }, // 7
      { ключ: "🎉 PARTY", 名前: "🎉", "Straße/№": 9 }, // 8 duplicate of 7
      { ключ: "👍🏽", 名前: "👍", "Straße/№": 10 }, // 9
      { ключ: "👍", 名前: "👍", "Straße/№": 11 }, // 10 differs: no skin-tone modifier
    ];

    expect(run({ rows, keyColumns: ["ключ"] })).toEqual({
      rows: [rows[0], rows[2], rows[5], rows[7], rows[9], rows[10]],
      columns: ["ключ", "名前", "Straße/№"],
      keyColumns: ["ключ"],
      stats: { inputRows: 11, outputRows: 6, blankRowsDropped: 0, duplicatesDropped: 5, trimmedValues: 0 },
      duplicates: [
        { index: 1, duplicateOf: 0 },
        { index: 3, duplicateOf: 2 },
        { index: 4, duplicateOf: 2 },
        { index: 6, duplicateOf: 5 },
        { index: 8, duplicateOf: 7 },
      ],
    });
    expect(run({ rows, keyColumns: ["ключ"], caseInsensitiveKeys: false })).toEqual({
      rows,
      columns: ["ключ", "名前", "Straße/№"],
      keyColumns: ["ключ"],
      stats: noDrops(11),
      duplicates: [],
    });
    // Non-ASCII key columns as a composite key.
    expect(run({ rows, keyColumns: ["名前", "Straße/№"] }).duplicates).toEqual([]);
  });
});

describe("cleanupRows: key value types (rule 6)", () => {
  it("keeps JSON types apart in keys: 1 and '1', true and 'true', differ", () => {
    const output = run({
      rows: [
        { k: 1, n: 0 },
        { k: "1", n: 1 },
        { k: 1.0, n: 2 }, // the same JSON number as 1: duplicate of 0
        { k: true, n: 3 },
        { k: "true", n: 4 },
        { k: "TRUE", n: 5 }, // case-insensitive string: duplicate of 4
        { k: false, n: 6 },
        { k: 0, n: 7 },
        { k: "null", n: 8 },
        { k: null, n: 9 },
      ],
      keyColumns: ["k"],
    });

    expect(output.rows.map((row) => row.n)).toEqual([0, 1, 3, 4, 6, 7, 8, 9]);
    expect(output.rows.map((row) => row.k)).toEqual([1, "1", true, "true", false, 0, "null", null]);
    expect(output.duplicates).toEqual([
      { index: 2, duplicateOf: 0 },
      { index: 5, duplicateOf: 4 },
    ]);
  });

  it("treats a null cell and a missing cell as the same key value", () => {
    expect(
      run({
        rows: [{ id: 1, k: null }, { id: 1 }, { id: 2 }, { id: 2, k: null }],
        keyColumns: ["id", "k"],
      }),
    ).toEqual({
      rows: [
        { id: 1, k: null },
        { id: 2, k: null },
      ],
      columns: ["id", "k"],
      keyColumns: ["id", "k"],
      stats: { inputRows: 4, outputRows: 2, blankRowsDropped: 0, duplicatesDropped: 2, trimmedValues: 0 },
      duplicates: [
        { index: 1, duplicateOf: 0 },
        { index: 3, duplicateOf: 2 },
      ],
    });
  });
});

describe("cleanupRows: prototype-like column names (rule 7)", () => {
  it('keeps "constructor", "toString", "hasOwnProperty" and "valueOf" as ordinary columns', () => {
    const request = JSON.parse(
      '{"rows":[{"constructor":"c","toString":"t","hasOwnProperty":1,"valueOf":null},' +
        '{"toString":"T2"},{"constructor":"C","toString":"t","hasOwnProperty":1,"valueOf":null}],' +
        '"keyColumns":["constructor","toString"]}',
    );

    const output = run(request);

    expect(output).toEqual({
      rows: [
        { constructor: "c", toString: "t", hasOwnProperty: 1, valueOf: null },
        { constructor: null, toString: "T2", hasOwnProperty: null, valueOf: null },
      ],
      columns: ["constructor", "toString", "hasOwnProperty", "valueOf"],
      keyColumns: ["constructor", "toString"],
      stats: { inputRows: 3, outputRows: 2, blankRowsDropped: 0, duplicatesDropped: 1, trimmedValues: 0 },
      duplicates: [{ index: 2, duplicateOf: 0 }],
    });
    for (const row of output.rows) {
      expect(Object.keys(row)).toEqual(["constructor", "toString", "hasOwnProperty", "valueOf"]);
    }
  });

  // Regression: zod's z.record strips an own "__proto__" key; rows are validated in place instead.
  it('keeps "__proto__" as an ordinary column through schema parsing', () => {
    const request = JSON.parse(
      '{"rows":[{"__proto__":"p1","constructor":"c","toString":"t"},' +
        '{"__proto__":"p2","constructor":"c","toString":"t"}]}',
    );

    const output = run(request);

    expect(output.columns).toEqual(["__proto__", "constructor", "toString"]);
    expect(output.rows).toEqual([
      JSON.parse('{"__proto__":"p1","constructor":"c","toString":"t"}'),
      JSON.parse('{"__proto__":"p2","constructor":"c","toString":"t"}'),
    ]);
    expect(output.duplicates).toEqual([]);
  });

  it('accepts "__proto__" as a key column when the rows have it', () => {
    const request = JSON.parse(
      '{"rows":[{"__proto__":"p","v":1},{"__proto__":"p","v":2}],"keyColumns":["__proto__"]}',
    );

    expect(CsvCleanupRequest.safeParse(request).success).toBe(true);
    expect(run(request).duplicates).toEqual([{ index: 1, duplicateOf: 0 }]);
  });

  it('rejects an object cell under "__proto__" at /rows/0/__proto__', () => {
    const request = JSON.parse('{"rows":[{"__proto__":{"polluted":true},"a":1}]}');

    expect(CsvCleanupRequest.safeParse(request).success).toBe(false);
    expect(fieldErrors(request)).toEqual([{ pointer: "/rows/0/__proto__", message: CELL_MESSAGE }]);
  });

  it('cleanupRows itself treats an own "__proto__" key as data (input built without the schema)', () => {
    // Bypasses the schema on purpose (it strips "__proto__", see above) to show cleanupRows is sound.
    const input: CsvCleanupInput = {
      rows: JSON.parse(
        '[{"__proto__":"p1","constructor":"c","toString":" t "},{"__proto__":"p2","constructor":"c","toString":"t"},' +
          '{"__proto__":"P1","constructor":"c","toString":"t"}]',
      ),
      keyColumns: ["__proto__", "constructor", "toString"],
      trimStrings: true,
      caseInsensitiveKeys: true,
      dropBlankRows: true,
    };

    const output = cleanupRows(input);

    expect(output).toEqual({
      rows: [
        JSON.parse('{"__proto__":"p1","constructor":"c","toString":"t"}'),
        JSON.parse('{"__proto__":"p2","constructor":"c","toString":"t"}'),
      ],
      columns: ["__proto__", "constructor", "toString"],
      keyColumns: ["__proto__", "constructor", "toString"],
      stats: { inputRows: 3, outputRows: 2, blankRowsDropped: 0, duplicatesDropped: 1, trimmedValues: 1 },
      duplicates: [
        {
          index: 2,
          duplicateOf: 0,
          match: "case-folded",
          differences: [{ column: "__proto__", kind: "case" }],
        },
      ],
    });
    for (const row of output.rows) {
      expect(Object.keys(row)).toEqual(["__proto__", "constructor", "toString"]);
      expect(Object.hasOwn(row, "__proto__")).toBe(true);
    }
  });

  it("does not pollute Object.prototype", () => {
    const requests = [
      JSON.parse('{"rows":[{"__proto__":{"polluted":true},"a":1}]}'),
      JSON.parse('{"rows":[{"__proto__":"polluted","constructor":"x","a":1}]}'),
    ];
    const direct: CsvCleanupInput = {
      rows: JSON.parse('[{"__proto__":"polluted","constructor":"x","toString":"y"}]'),
      trimStrings: true,
      caseInsensitiveKeys: true,
      dropBlankRows: true,
    };

    for (const request of requests) CsvCleanupRequest.safeParse(request);
    for (const request of requests) {
      const parsed = CsvCleanupRequest.safeParse(request);
      if (parsed.success) cleanupRows(parsed.data);
    }
    const output = cleanupRows(direct);

    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.hasOwn(Object.prototype, "polluted")).toBe(false);
    expect(Object.getPrototypeOf({})).toBe(Object.prototype);
    expect(typeof {}.toString).toBe("function");
    // An output row's "toString" and "constructor" are its own data, not the inherited members.
    expect(output.rows[0]?.toString).toBe("y");
    expect(output.rows[0]?.constructor).toBe("x");
    expect(Object.getOwnPropertyDescriptor(output.rows[0], "__proto__")?.value).toBe("polluted");
  });
});

describe("CsvCleanupRequest validation (rule 8)", () => {
  it("rejects object and array cells with a pointer exactly /rows/<i>/<column> (RFC 6901 escaped)", () => {
    expect(
      fieldErrors({
        rows: [{ a: 1 }, { a: { nested: true } }, { b: [1, 2] }, { "x/y~z": {} }, { ok: "fine", bad: [] }],
      }),
    ).toEqual([
      { pointer: "/rows/1/a", message: CELL_MESSAGE },
      { pointer: "/rows/2/b", message: CELL_MESSAGE },
      { pointer: "/rows/3/x~1y~0z", message: CELL_MESSAGE },
      { pointer: "/rows/4/bad", message: CELL_MESSAGE },
    ]);
  });

  it("rejects a key column that no row has with pointer /keyColumns/<index>", () => {
    expect(
      fieldErrors({ rows: [{ id: 1 }, { name: "x" }], keyColumns: ["id", "missing", "name", "Id"] }),
    ).toEqual([
      { pointer: "/keyColumns/1", message: 'key column "missing" is not a column of any row' },
      { pointer: "/keyColumns/3", message: 'key column "Id" is not a column of any row' },
    ]);
  });

  it("rejects unknown top-level properties with pointer /<name>", () => {
    expect(fieldErrors({ rows: [{ a: 1 }], dedupe: true, "we/ird": 1 })).toEqual([
      { pointer: "/dedupe", message: "unknown property (not allowed)" },
      { pointer: "/we~1ird", message: "unknown property (not allowed)" },
    ]);
    expect(fieldErrors(JSON.parse('{"rows":[{"a":1}],"__proto__":{"x":1}}'))).toEqual([
      { pointer: "/__proto__", message: "unknown property (not allowed)" },
    ]);
  });

  it("rejects 0 rows and 501 rows with pointer /rows", () => {
    expect(fieldErrors({ rows: [] })).toEqual([
      { pointer: "/rows", message: expect.stringMatching(/>=\s*1/) },
    ]);
    const rows501 = Array.from({ length: 501 }, (_, i) => ({ id: i }));
    expect(fieldErrors({ rows: rows501 })).toEqual([
      { pointer: "/rows", message: expect.stringMatching(/<=\s*500/) },
    ]);
  });

  it("accepts 25 key columns and rejects 26 with pointer /keyColumns", () => {
    const columns = Array.from({ length: 26 }, (_, i) => `c${i}`);
    const row = Object.fromEntries(columns.map((column, i) => [column, i]));

    expect(CsvCleanupRequest.safeParse({ rows: [row], keyColumns: columns.slice(0, 25) }).success).toBe(true);
    expect(fieldErrors({ rows: [row], keyColumns: columns })).toEqual([
      { pointer: "/keyColumns", message: expect.stringMatching(/<=\s*25/) },
    ]);
    expect(fieldErrors({ rows: [row], keyColumns: [] })).toEqual([
      { pointer: "/keyColumns", message: expect.stringMatching(/>=\s*1/) },
    ]);
  });

  it("applies defaults: trimStrings, caseInsensitiveKeys and dropBlankRows are all true", () => {
    const parsed = CsvCleanupRequest.parse({ rows: [{ a: " x " }] });

    expect(parsed).toEqual({
      rows: [{ a: " x " }],
      trimStrings: true,
      caseInsensitiveKeys: true,
      dropBlankRows: true,
    });
    expect(parsed.keyColumns).toBeUndefined();
    expect(
      CsvCleanupRequest.parse({
        rows: [{ a: 1 }],
        keyColumns: ["a"],
        trimStrings: false,
        caseInsensitiveKeys: false,
        dropBlankRows: false,
      }),
    ).toEqual({
      rows: [{ a: 1 }],
      keyColumns: ["a"],
      trimStrings: false,
      caseInsensitiveKeys: false,
      dropBlankRows: false,
    });
  });

  it("rejects rows that are not objects with pointer /rows/<i>", () => {
    expect(fieldErrors({ rows: [{ a: 1 }, [1, 2], "x", null] }).map((error) => error.pointer)).toEqual([
      "/rows/1",
      "/rows/2",
      "/rows/3",
    ]);
  });
});

describe("cleanupRows: 500-row input (rule 9)", () => {
  // Row i:
  //   i % 10 === 9: blank (empty string and nulls)                          -> 50 blank rows dropped
  //   i % 10 === 5: id of row i - 5 in lower case, other cells different  -> 50 duplicates dropped
  //   otherwise:    unique id; name padded with spaces when i % 7 === 0     -> 400 rows kept
  //   row 498 additionally has a "note" column that no earlier row has.
  const rows: Row[] = Array.from({ length: 500 }, (_, i): Row => {
    if (i % 10 === 9) return { id: "", name: null, qty: null };
    if (i % 10 === 5) return { id: `id-${i - 5}`, name: "duplicate", qty: -1 };
    const row: Row = { id: `ID-${i}`, name: i % 7 === 0 ? `  name ${i}  ` : `name ${i}`, qty: i };
    if (i === 498) row.note = "last";
    return row;
  });

  it("accepts exactly 500 rows and reports exact stats, duplicates and output order", () => {
    const parsed = CsvCleanupRequest.safeParse({ rows, keyColumns: ["id"] });
    expect(parsed.success).toBe(true);
    if (!parsed.success) return;

    const output = run(parsed.data);

    const kept = Array.from({ length: 500 }, (_, i) => i).filter((i) => i % 10 !== 5 && i % 10 !== 9);
    expect(kept).toHaveLength(400);
    const paddedKept = kept.filter((i) => i % 7 === 0).length;
    expect(output).toEqual({
      rows: kept.map((i) => ({ id: `ID-${i}`, name: `name ${i}`, qty: i, note: i === 498 ? "last" : null })),
      columns: ["id", "name", "qty", "note"],
      keyColumns: ["id"],
      stats: {
        inputRows: 500,
        outputRows: 400,
        blankRowsDropped: 50,
        duplicatesDropped: 50,
        trimmedValues: paddedKept,
      },
      duplicates: Array.from({ length: 50 }, (_, k) => ({ index: 10 * k + 5, duplicateOf: 10 * k })),
    });
    expect(paddedKept).toBe(58);
  });
});

describe("cleanupRows: determinism and purity (rule 10)", () => {
  const request = {
    rows: [
      { id: " A ", name: "Ada", tags: "x" },
      { id: "a", name: "ADA" },
      { id: "", name: null },
      { name: "Grace", id: "B", extra: true },
      { id: "b", extra: 1 },
    ],
    keyColumns: ["id"],
  };

  it("gives deeply equal output for the same input twice and does not mutate the input", () => {
    const snapshot = structuredClone(request);
    const input = CsvCleanupRequest.parse(request);
    const inputSnapshot = structuredClone(input);
    deepFreeze(input); // any in-place write by cleanupRows would throw

    const first = run(input);
    const second = run(input);
    const third = run(request);

    expect(second).toEqual(first);
    expect(third).toEqual(first);
    expect(JSON.stringify(second)).toBe(JSON.stringify(first));
    expect(input).toEqual(inputSnapshot);
    expect(request).toEqual(snapshot);
    expect(first).toEqual({
      rows: [
        { id: "A", name: "Ada", tags: "x", extra: null },
        { id: "B", name: "Grace", tags: null, extra: true },
      ],
      columns: ["id", "name", "tags", "extra"],
      keyColumns: ["id"],
      stats: { inputRows: 5, outputRows: 2, blankRowsDropped: 1, duplicatesDropped: 2, trimmedValues: 1 },
      duplicates: [
        { index: 1, duplicateOf: 0 },
        { index: 4, duplicateOf: 3 },
      ],
    });
  });

  it("returns fresh row objects, so changing the output does not change the input", () => {
    const input = CsvCleanupRequest.parse({ rows: [{ id: "x" }] });
    const output = cleanupRows(input);

    expect(output.rows[0]).not.toBe(input.rows[0]);
    (output.rows[0] as Row).id = "changed";
    expect(input.rows[0]).toEqual({ id: "x" });
    expect(cleanupRows(input).rows).toEqual([{ id: "x" }]);
  });
});

describe("cleanupRows: stats consistency (rule 11)", () => {
  it("outputRows = inputRows - blankRowsDropped - duplicatesDropped in every option combination", () => {
    const rows = [
      { id: "A", v: " 1 " },
      { id: "a", v: "1" },
      { id: "  ", v: null },
      {},
      { id: "B", v: 2 },
      { id: " B ", v: 2 },
      { id: "A", v: " 1 " },
    ];
    const expected: Record<string, CsvCleanupOutput["stats"]> = {
      // trimStrings, caseInsensitiveKeys, dropBlankRows
      "true,true,true": {
        inputRows: 7,
        outputRows: 2,
        blankRowsDropped: 2,
        duplicatesDropped: 3,
        trimmedValues: 4,
      },
      "true,true,false": {
        inputRows: 7,
        outputRows: 4,
        blankRowsDropped: 0,
        duplicatesDropped: 3,
        trimmedValues: 4,
      },
      "true,false,true": {
        inputRows: 7,
        outputRows: 3,
        blankRowsDropped: 2,
        duplicatesDropped: 2,
        trimmedValues: 4,
      },
      "true,false,false": {
        inputRows: 7,
        outputRows: 5,
        blankRowsDropped: 0,
        duplicatesDropped: 2,
        trimmedValues: 4,
      },
      "false,true,true": {
        inputRows: 7,
        outputRows: 3,
        blankRowsDropped: 2,
        duplicatesDropped: 2,
        trimmedValues: 0,
      },
      "false,true,false": {
        inputRows: 7,
        outputRows: 5,
        blankRowsDropped: 0,
        duplicatesDropped: 2,
        trimmedValues: 0,
      },
      "false,false,true": {
        inputRows: 7,
        outputRows: 4,
        blankRowsDropped: 2,
        duplicatesDropped: 1,
        trimmedValues: 0,
      },
      "false,false,false": {
        inputRows: 7,
        outputRows: 6,
        blankRowsDropped: 0,
        duplicatesDropped: 1,
        trimmedValues: 0,
      },
    };

    for (const trimStrings of [true, false]) {
      for (const caseInsensitiveKeys of [true, false]) {
        for (const dropBlankRows of [true, false]) {
          const label = `${trimStrings},${caseInsensitiveKeys},${dropBlankRows}`;
          const output = run({ rows, keyColumns: ["id"], trimStrings, caseInsensitiveKeys, dropBlankRows });
          const { stats } = output;

          expect(stats, label).toEqual(expected[label]);
          expect(stats.outputRows, label).toBe(
            stats.inputRows - stats.blankRowsDropped - stats.duplicatesDropped,
          );
          expect(stats.inputRows, label).toBe(rows.length);
          expect(stats.outputRows, label).toBe(output.rows.length);
          expect(stats.duplicatesDropped, label).toBe(output.duplicates.length);
        }
      }
    }
  });
});

describe("cleanupRows: how a dropped row matched, and values kept exactly (issue 18)", () => {
  it("says which key columns matched only case-folded, in Unicode form or as the same number", () => {
    const output = cleanupRows(
      CsvCleanupRequest.parse({
        rows: [
          { id: "A-1", n: 1, name: "caf\u00e9" },
          { id: "A-1", n: 1, name: "caf\u00e9" },
          { id: "a-1", n: 1, name: "cafe\u0301" },
          { id: "A-1", n: new ExactNumber("1.0"), name: "caf\u00e9" },
        ],
        keyColumns: ["id", "n", "name"],
      }),
    );
    expect(output.duplicates).toEqual([
      { index: 1, duplicateOf: 0, match: "exact", differences: [] },
      {
        index: 2,
        duplicateOf: 0,
        match: "case-folded",
        differences: [
          { column: "id", kind: "case" },
          { column: "name", kind: "unicode-form" },
        ],
      },
      {
        index: 3,
        duplicateOf: 0,
        match: "normalized",
        differences: [{ column: "n", kind: "number-spelling" }],
      },
    ]);
  });

  it("compares numbers by exact decimal value: 2^53 + 1 is not 2^53, 1.0 is 1", () => {
    const rows = [
      { v: new ExactNumber("9007199254740993") },
      { v: 9007199254740992 },
      { v: new ExactNumber("9.007199254740992e15") },
    ];
    const output = cleanupRows(CsvCleanupRequest.parse({ rows, keyColumns: ["v"] }));
    expect(output.rows).toEqual([{ v: new ExactNumber("9007199254740993") }, { v: 9007199254740992 }]);
    expect(output.duplicates).toEqual([
      {
        index: 2,
        duplicateOf: 1,
        match: "normalized",
        differences: [{ column: "v", kind: "number-spelling" }],
      },
    ]);
    expect(decimalKey(new ExactNumber("-0.0"))).toBe("0");
    expect(decimalKey(new ExactNumber("10e-1"))).toBe(decimalKey(1));
    expect(decimalKey(new ExactNumber("1e400"))).toBe("1e400");
  });

  it("keepNumberLexemes marks exactly the numbers a double would change, wherever they are", () => {
    const text =
      '{"rows":[{"a":9007199254740993,"b":1.50,"c":1e3,"d":-0,"e":0.1,"f":12,"g":"1.50","h":0.0000001,' +
      '"__proto__":12345678901234567890}],"x":[1.0]}';
    const parsed = JSON.parse(text);
    expect(keepNumberLexemes(text, parsed)).toBe(7);
    const row = parsed.rows[0];
    expect(row.a).toEqual(new ExactNumber("9007199254740993"));
    expect([row.b.lexeme, row.c.lexeme, row.d.lexeme, row.h.lexeme]).toEqual([
      "1.50",
      "1e3",
      "-0",
      "0.0000001",
    ]);
    expect([row.e, row.f, row.g]).toEqual([0.1, 12, "1.50"]);
    expect(Object.getOwnPropertyDescriptor(row, "__proto__")?.value).toEqual(
      new ExactNumber("12345678901234567890"),
    );
    expect(parsed.x[0]).toEqual(new ExactNumber("1.0"));
    expect(Array.isArray(parsed.x)).toBe(true);
  });

  it("writes the answer with every number as the request wrote it", () => {
    const input = readCsvCleanupRequest(
      Buffer.from(
        '{"rows":[{"id":1234567890123456789,"x":1.50},{"id":1234567890123456789,"x":2}],"keyColumns":["id"]}',
      ),
      "application/json",
      {},
    );
    expect(runCleanup(input).bodyText).toBe(
      '{"rows":[{"id":1234567890123456789,"x":1.50}],"columns":["id","x"],"keyColumns":["id"],' +
        '"stats":{"inputRows":2,"outputRows":1,"blankRowsDropped":0,"duplicatesDropped":1,"trimmedValues":0},' +
        '"duplicates":[{"index":1,"duplicateOf":0,"match":"exact","differences":[]}]}',
    );
  });

  it("reads an RFC 4180 CSV body: quoted delimiters, doubled quotes, CRLF inside quotes, a BOM", () => {
    const input = readCsvCleanupRequest(
      Buffer.from('\uFEFFid;note\r\n1;"a; b"\r\n2;"say ""hi""\r\nbye"\r\n'),
      "text/csv",
      { delimiter: [";"], trimStrings: ["false"] },
    );
    expect(input.rows).toEqual([
      { id: "1", note: "a; b" },
      { id: "2", note: 'say "hi"\r\nbye' },
    ]);
    expect(input.trimStrings).toBe(false);
  });
});
