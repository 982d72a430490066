import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import { parse } from "csv-parse/sync";
import fc from "fast-check";
import { describe, expect, it } from "vitest";

/**
 * The CSV/JSON quality toolkit reads files in pieces (1 MiB reads). Generated valid CSV (quotes,
 * every delimiter, CR/LF inside fields, BOMs, 2-, 3- and 4-byte UTF-8, astral characters, empty
 * fields; no ragged rows), encoded as UTF-8 or UTF-16 and cut at random byte offsets (one byte at a
 * time too, and at every offset of short inputs), must give the rows it was written from, the same
 * rows as one piece, and the same rows as two independent readers: csv-parse and, where python3 is
 * installed, Python's csv module. Seeded: CSV_PROPERTY_SEED=<seed> replays a run.
 */

const KIT = path.resolve(import.meta.dirname, "../../products/csv-json-quality-toolkit");
type Row = string[];
interface CsvParserClass {
  new (options: {
    delimiter: string;
    onRow: (cells: Row) => void;
  }): { push(text: string): void; end(): void };
}
interface InputDecoderClass {
  new (): { write(bytes: Uint8Array): string; end(): string };
}
const { CsvParser } = (await import(pathToFileURL(path.join(KIT, "lib/csv.mjs")).href)) as {
  CsvParser: CsvParserClass;
};
const { InputDecoder } = (await import(pathToFileURL(path.join(KIT, "lib/text.mjs")).href)) as {
  InputDecoder: InputDecoderClass;
};
const { readRows } = (await import(pathToFileURL(path.join(KIT, "lib/rows.mjs")).href)) as {
  readRows: (
    file: string,
    visit: (record: Record<string, string>) => void,
    options: { progress: { quiet: boolean } },
  ) => Promise<{ rows: number; problemCount: number; columns: string[] }>;
};

const SEED = Number(process.env.CSV_PROPERTY_SEED ?? Math.floor(Math.random() * 2 ** 31));
const RUNS = Number(process.env.CSV_PROPERTY_RUNS ?? 3000);

/** Cell material that breaks naive readers: delimiters, quotes, line ends, multi-byte and astral characters, a BOM. */
const PIECES = [
  ",",
  ";",
  "\t",
  "|",
  '"',
  '""',
  "\r",
  "\n",
  "\r\n",
  " ",
  "a",
  "1",
  "é",
  "€",
  "𝄞",
  "😀",
  "\ufeff",
  "名",
];
const cell = fc.oneof(
  { weight: 1, arbitrary: fc.constant("") },
  {
    weight: 5,
    arbitrary: fc
      .array(fc.oneof(fc.constantFrom(...PIECES), fc.string({ unit: "grapheme", maxLength: 3 })), {
        minLength: 1,
        maxLength: 6,
      })
      .map((parts) => parts.join("")),
  },
);
const table = fc
  .integer({ min: 1, max: 5 })
  .chain((columns) =>
    fc.array(fc.array(cell, { minLength: columns, maxLength: columns }), { minLength: 1, maxLength: 6 }),
  );
const layout = fc.record({
  delimiter: fc.constantFrom(",", ";", "\t", "|"),
  bom: fc.boolean(),
  quoteAll: fc.boolean(),
  endings: fc.array(fc.constantFrom("\r\n", "\n", "\r"), { minLength: 6, maxLength: 6 }),
  trailingLineEnd: fc.boolean(),
  encoding: fc.constantFrom("utf-8", "utf-8", "utf-16le", "utf-16be"),
  cuts: fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 12 }),
  oneByteAtATime: fc.boolean(),
});
type Layout = typeof layout extends fc.Arbitrary<infer T> ? T : never;

/** RFC 4180 text for the rows: quoted where needed (or everywhere), mixed line ends. */
function write(rows: Row[], { delimiter, bom, quoteAll, endings, trailingLineEnd }: Layout): string {
  const columns = rows[0]?.length ?? 0;
  const quote = (value: string) => {
    // One empty field alone on a line would be an empty line; a first field opening with U+FEFF would read as a BOM.
    const must =
      value.includes(delimiter) ||
      /["\r\n]/.test(value) ||
      value.startsWith("\ufeff") ||
      (columns === 1 && value === "");
    return must || quoteAll ? `"${value.replaceAll('"', '""')}"` : value;
  };
  const lines = rows.map((row) => row.map(quote).join(delimiter));
  return (
    (bom ? "\ufeff" : "") +
    lines
      .map(
        (line, i) =>
          line + (i < lines.length - 1 || trailingLineEnd ? (endings[i % endings.length] ?? "\n") : ""),
      )
      .join("")
  );
}

function encode(text: string, encoding: Layout["encoding"]): Buffer {
  if (encoding === "utf-8") return Buffer.from(text);
  const le = Buffer.from(`\ufeff${text.replace(/^\ufeff/, "")}`, "utf16le");
  return encoding === "utf-16be" ? le.swap16() : le;
}

/** The kit's reading path: bytes cut at `cuts` → InputDecoder → CsvParser. */
function kitRows(bytes: Buffer, cuts: number[], delimiter: string): Row[] {
  const rows: Row[] = [];
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

const csvParseRows = (text: string, delimiter: string): Row[] =>
  parse(text, { delimiter, bom: true, record_delimiter: ["\r\n", "\n", "\r"], relax_column_count: false });

const python = spawnSync("python3", ["--version"], { encoding: "utf8" }).status === 0;
/** Python's csv module on many texts at once (one process): JSON lines in, JSON lines out. */
function pythonRows(cases: { text: string; delimiter: string }[]): Row[][] {
  const script = [
    "import csv, io, json, sys",
    "for line in sys.stdin:",
    "    case = json.loads(line)",
    "    text = case['text'][1:] if case['text'].startswith('\\ufeff') else case['text']",
    "    rows = list(csv.reader(io.StringIO(text, newline=''), delimiter=case['delimiter'], strict=True))",
    "    print(json.dumps(rows))",
  ].join("\n");
  const result = spawnSync("python3", ["-c", script], {
    input: cases.map((c) => JSON.stringify(c)).join("\n"),
    encoding: "utf8",
    maxBuffer: 256 << 20,
  });
  if (result.status !== 0) throw new Error(`python3 failed: ${result.stderr}`);
  return result.stdout
    .trim()
    .split("\n")
    .map((line) => JSON.parse(line) as Row[]);
}

describe(`the CSV kit's streaming reader (seed ${SEED}, ${RUNS} generated files)`, () => {
  it("gives the written rows, whatever the cuts and the encoding, as one piece, csv-parse and Python's csv do", () => {
    console.log(`csv-kit-parser property: seed ${SEED} (replay: CSV_PROPERTY_SEED=${SEED}), ${RUNS} runs`);
    const written: { text: string; delimiter: string; rows: Row[] }[] = [];
    let parses = 0;
    fc.assert(
      fc.property(table, layout, (rows, options) => {
        const text = write(rows, options);
        const bytes = encode(text, options.encoding);
        const { delimiter } = options;
        const cutsAt = options.oneByteAtATime
          ? Array.from({ length: Math.max(bytes.length - 1, 0) }, (_, i) => i + 1)
          : [...new Set(options.cuts.map((f) => Math.floor(f * bytes.length)))]
              .filter((at) => at > 0)
              .sort((a, b) => a - b);
        expect(kitRows(bytes, [], delimiter)).toEqual(rows);
        expect(kitRows(bytes, cutsAt, delimiter)).toEqual(rows);
        parses += 2;
        if (bytes.length <= 64) {
          for (let cut = 1; cut < bytes.length; cut++) expect(kitRows(bytes, [cut], delimiter)).toEqual(rows);
          parses += bytes.length - 1;
        }
        expect(csvParseRows(text, delimiter)).toEqual(rows);
        written.push({ text, delimiter, rows });
      }),
      { seed: SEED, numRuns: RUNS },
    );
    console.log(`csv-kit-parser property: ${written.length} files, ${parses} chunked parses`);
    if (!python) {
      console.log(
        "csv-kit-parser property: python3 not found, the comparison with Python's csv module did not run",
      );
      return;
    }
    const fromPython = pythonRows(written);
    written.forEach((c, i) => {
      expect(fromPython[i], `Python's csv on ${JSON.stringify(c.text)} (seed ${SEED})`).toEqual(c.rows);
    });
  }, 120_000);

  it.runIf(python)(
    "reads a 7 MB file Python's csv module wrote (every field quoted, read 1 MiB at a time) as Python reads it back",
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "csv-kit-python-"));
      try {
        const file = path.join(dir, "written-by-python.csv");
        const script = [
          "import csv, json, random, sys",
          "random.seed(int(sys.argv[2]))",
          "pieces = ['a', 'b', ',', ';', '\"', '\\r\\n', '\\n', ' ', 'é', '€', '😀', '名', 'Doe, Jane']",
          "rows = [['id', 'name', 'note', 'city']]",
          "for i in range(150000):",
          "    rows.append([str(i)] + [''.join(random.choice(pieces) for _ in range(random.randint(0, 8))) for _ in range(3)])",
          "with open(sys.argv[1], 'w', newline='', encoding='utf-8') as f:",
          "    csv.writer(f, quoting=csv.QUOTE_ALL).writerows(rows)",
          "with open(sys.argv[1], newline='', encoding='utf-8') as f:",
          "    print(json.dumps(list(csv.reader(f))))",
        ].join("\n");
        const written = spawnSync("python3", ["-c", script, file, String(SEED)], {
          encoding: "utf8",
          maxBuffer: 256 << 20,
        });
        expect(written.status, written.stderr).toBe(0);
        const [header, ...expected] = JSON.parse(written.stdout) as Row[];
        expect(fs.statSync(file).size).toBeGreaterThan(6 << 20);
        const rows: Row[] = [];
        const read = await readRows(file, (record) => rows.push(Object.values(record)), {
          progress: { quiet: true },
        });
        expect(read.problemCount).toBe(0);
        expect(read.columns).toEqual(header);
        expect(rows).toEqual(expected);
      } finally {
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
    120_000,
  );
});
