#!/usr/bin/env node
// Deduplicate rows on key columns, keeping the first occurrence and the input order. Streams;
// memory grows with the number of distinct keys only. A row with a blank key column is kept, never
// a duplicate, and counted in blankKeyRows. A ragged row or a duplicate column name
// stops the run (a value would be lost) and nothing is written.
// usage: node scripts/dedupe.mjs <in> --keys email[,country] [--out <file>] [--case-sensitive] [--fail-on-duplicates] [--delimiter ;]
// exit 0, or 1 with --fail-on-duplicates when duplicates were found (or when the data would lose values), 2 wrong call
import { EXIT, parseCliArgs, runCli, UsageError } from "../lib/cli.mjs";
import { createDeduper } from "../lib/quality.mjs";
import { createRowWriter, delimiterOption, formatOf, outputFormatOf, readRows } from "../lib/rows.mjs";

const USAGE = "usage: node scripts/dedupe.mjs <in> --keys a,b [--out file] [--case-sensitive] [--fail-on-duplicates] [--delimiter C] [--progress|--quiet]";
/** Duplicate pairs listed on stderr (all are counted). */
const MAX_LISTED = 1000;

await runCli(async () => {
  const { positional, options } = parseCliArgs(process.argv.slice(2), {
    options: ["keys", "out", "delimiter"],
    flags: ["case-sensitive", "fail-on-duplicates", "progress", "quiet"],
  });
  if (positional.length !== 1 || !options.keys) throw new UsageError(`one input file and --keys are needed; ${USAGE}`);
  const [file] = positional;
  const keys = options.keys.split(",").map((key) => key.trim()).filter(Boolean);
  if (keys.length === 0) throw new UsageError(`--keys names no column; ${USAGE}`);
  const delimiter = delimiterOption(options.delimiter);
  const progress = { always: Boolean(options.progress), quiet: Boolean(options.quiet) };
  const checkKeys = (columns) => {
    const missing = keys.filter((key) => !columns.includes(key));
    if (missing.length > 0) throw new UsageError(`key column(s) not in the file: ${missing.join(", ")} (columns: ${columns.join(", ")})`);
  };

  // JSON input: the columns (for the key check and CSV output) come from a first pass.
  let columns;
  if (formatOf(file) !== "csv") {
    const seen = new Set();
    await readRows(file, (row) => {
      for (const key in row) seen.add(key);
    }, { strict: true, label: "dedupe (columns)", progress });
    columns = [...seen];
    checkKeys(columns);
  }
  const deduper = createDeduper(keys, { caseInsensitive: !options["case-sensitive"] });
  const duplicates = [];
  let duplicateCount = 0;
  let inputRows = 0;
  let writer;
  if (outputFormatOf(options.out).format !== "csv" || columns) writer = createRowWriter(options.out, { columns });
  try {
    await readRows(
      file,
      (row, index) => {
        inputRows++;
        const duplicateOf = deduper.add(row, index);
        if (duplicateOf === undefined) writer.write(row);
        else {
          duplicateCount++;
          if (duplicates.length < MAX_LISTED) duplicates.push({ index, duplicateOf });
        }
      },
      {
        delimiter,
        strict: true,
        label: "dedupe",
        progress,
        onColumns: (names, detected) => {
          checkKeys(names);
          columns = names;
          writer ??= createRowWriter(options.out, { columns, delimiter: detected });
        },
      },
    );
    writer ??= createRowWriter(options.out, { columns: columns ?? [] });
    const outputRows = writer.close();
    process.stderr.write(`${JSON.stringify({ inputRows, outputRows, duplicateCount, blankKeyRows: deduper.blankKeyRows, duplicates, truncated: duplicateCount > duplicates.length })}\n`);
    return options["fail-on-duplicates"] && duplicateCount > 0 ? EXIT.FAIL : EXIT.PASS;
  } catch (error) {
    writer?.abort();
    throw error;
  }
});
