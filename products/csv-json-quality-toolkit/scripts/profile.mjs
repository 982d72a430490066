#!/usr/bin/env node
// Profile a CSV/TSV/JSON/JSONL file: per column fill rate, distinct values, kinds, range, top values.
// Streams the file: millions of rows in bounded memory (see README, "Sizes and speed").
// usage: node scripts/profile.mjs <file> [--top 5] [--delimiter ;] [--progress | --quiet]
// exit 0, 1 when the file cannot be read as its format (an unclosed JSON array), 2 on a wrong call
import { EXIT, integerOption, parseCliArgs, runCli, UsageError } from "../lib/cli.mjs";
import { createProfiler } from "../lib/quality.mjs";
import { delimiterOption, formatOf, readRows } from "../lib/rows.mjs";

const USAGE = "usage: node scripts/profile.mjs <file.csv|tsv|json|jsonl> [--top N] [--delimiter C] [--progress|--quiet]";

await runCli(async () => {
  const { positional, options } = parseCliArgs(process.argv.slice(2), { options: ["top", "delimiter"], flags: ["progress", "quiet"] });
  if (positional.length !== 1) throw new UsageError(`one input file is needed; ${USAGE}`);
  const [file] = positional;
  const profiler = createProfiler([], { top: integerOption(options, "top", 5) });
  // CSV columns come from the header; JSON rows may bring new columns at any row.
  const json = formatOf(file) !== "csv";
  const known = new Set();
  const read = await readRows(
    file,
    (row) => {
      if (json && typeof row === "object" && row !== null) {
        for (const key in row) {
          if (!known.has(key)) {
            known.add(key);
            profiler.addColumns([key]);
          }
        }
      }
      profiler.add(row);
    },
    {
      delimiter: delimiterOption(options.delimiter),
      label: "profile",
      progress: { always: Boolean(options.progress), quiet: Boolean(options.quiet) },
      onColumns: (columns) => profiler.addColumns(columns),
    },
  );
  const { rows, columns } = profiler.result();
  const delimiter = read.delimiter ? { delimiter: read.delimiter } : {};
  const report = { file, format: read.format, encoding: read.encoding, ...delimiter, rows, columns, parseProblems: read.problems, parseProblemCount: read.problemCount };
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  return EXIT.PASS;
});
