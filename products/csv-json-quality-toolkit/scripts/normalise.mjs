#!/usr/bin/env node
// Normalise a CSV/TSV/JSON/JSONL file: trim and fold whitespace, NFC, blank cells to null, drop blank
// rows, optionally snake_case headers. Writes the format the output name says (stdout: JSON), CSV
// with the input's delimiter. Streams. Never loses a value: a ragged row, a duplicate column name,
// or two columns that --snake-case-headers would merge stop the run (exit 1) and nothing is written.
// usage: node scripts/normalise.mjs <in> [--out <file>] [--snake-case-headers] [--keep-blank-rows] [--delimiter ;]
// exit 0 written, 1 refused (the data would lose values), 2 wrong call
import { DataError, EXIT, parseCliArgs, runCli, UsageError } from "../lib/cli.mjs";
import { createNormaliser } from "../lib/quality.mjs";
import { createRowWriter, delimiterOption, formatOf, outputFormatOf, readRows } from "../lib/rows.mjs";

const USAGE = "usage: node scripts/normalise.mjs <in> [--out file] [--snake-case-headers] [--keep-blank-rows] [--delimiter C] [--progress|--quiet]";

await runCli(async () => {
  const { positional, options } = parseCliArgs(process.argv.slice(2), {
    options: ["out", "delimiter"],
    flags: ["snake-case-headers", "keep-blank-rows", "progress", "quiet"],
  });
  if (positional.length !== 1) throw new UsageError(`one input file is needed; ${USAGE}`);
  const [file] = positional;
  const settings = { snakeCaseHeaders: Boolean(options["snake-case-headers"]), dropBlankRows: !options["keep-blank-rows"] };
  const delimiter = delimiterOption(options.delimiter);
  const progress = { always: Boolean(options.progress), quiet: Boolean(options.quiet) };
  const guard = (action) => {
    try {
      return action();
    } catch (error) {
      if (error instanceof DataError || error instanceof UsageError) throw error;
      throw new DataError(`${error.message}; nothing was written`);
    }
  };

  // CSV output from JSON input needs every column before the first row: one extra pass collects them.
  let columns;
  if (formatOf(file) !== "csv" && outputFormatOf(options.out).format === "csv") {
    const names = createNormaliser(settings);
    const seen = new Set();
    const collect = (row) => {
      for (const key in row) {
        if (!seen.has(key)) {
          seen.add(key);
          guard(() => names.header(key));
        }
      }
    };
    await readRows(file, collect, { strict: true, label: "normalise (columns)", progress });
    columns = [...seen].map((key) => names.header(key));
  }

  const normaliser = createNormaliser(settings);
  let writer;
  let inputRows = 0;
  try {
    await readRows(
      file,
      (row) => {
        inputRows++;
        writer ??= createRowWriter(options.out, { columns: columns ?? [], delimiter: "," });
        const normalised = guard(() => normaliser.row(row));
        if (normalised !== undefined) writer.write(normalised);
      },
      {
        delimiter,
        strict: true,
        label: "normalise",
        progress,
        onColumns: (names, detected) => {
          columns = guard(() => normaliser.columns(names));
          writer = createRowWriter(options.out, { columns, delimiter: detected });
        },
      },
    );
    writer ??= createRowWriter(options.out, { columns: columns ?? [] });
    const outputRows = writer.close();
    process.stderr.write(`${JSON.stringify({ inputRows, outputRows, blankRowsDropped: normaliser.blankRowsDropped })}\n`);
    return EXIT.PASS;
  } catch (error) {
    writer?.abort();
    throw error;
  }
});
