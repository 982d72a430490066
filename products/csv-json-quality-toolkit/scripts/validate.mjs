#!/usr/bin/env node
// Validate every row of a CSV/TSV/JSON/JSONL file against a JSON Schema (one row = one instance).
// Streams the file; CSV cells are read as the schema's types.
// usage: node scripts/validate.mjs <file> --schema <schema.json> [--max-errors 50] [--delimiter ;] [--progress|--quiet]
// exit 0 all rows valid, 1 some row invalid or the file does not parse (report on stdout), 2 wrong call or schema error
import { EXIT, integerOption, parseCliArgs, runCli, UsageError } from "../lib/cli.mjs";
import { createRowValidator } from "../lib/quality.mjs";
import { delimiterOption, formatOf, readJsonFile, readRows } from "../lib/rows.mjs";
import { checkSchema } from "../lib/schema.mjs";

const USAGE = "usage: node scripts/validate.mjs <file> --schema <schema.json> [--max-errors N] [--delimiter C] [--progress|--quiet]";

await runCli(async () => {
  const { positional, options } = parseCliArgs(process.argv.slice(2), {
    options: ["schema", "max-errors", "delimiter"],
    flags: ["progress", "quiet"],
  });
  if (positional.length !== 1 || !options.schema) throw new UsageError(`one input file and --schema are needed; ${USAGE}`);
  const [file] = positional;
  const maxErrors = integerOption(options, "max-errors", 50);
  const delimiter = delimiterOption(options.delimiter);
  const coerce = formatOf(file) === "csv";
  const schema = readJsonFile(options.schema, "schema");
  const schemaProblems = checkSchema(schema);
  if (schemaProblems.length > 0) throw new UsageError(`the schema ${options.schema} cannot be used: ${schemaProblems.join("; ")}`);
  const validator = createRowValidator(schema, { coerce, maxErrors });
  const read = await readRows(file, (row, index) => validator.add(row, index), {
    delimiter,
    label: "validate",
    progress: { always: Boolean(options.progress), quiet: Boolean(options.quiet) },
  });
  const report = validator.result();
  const valid = report.invalidRows === 0 && read.problemCount === 0;
  process.stdout.write(
    `${JSON.stringify(
      {
        file,
        valid,
        rows: report.rows,
        invalidRows: report.invalidRows,
        parseProblems: read.problems,
        parseProblemCount: read.problemCount,
        errors: report.errors,
        errorCount: report.errorCount,
        truncated: report.errorCount > report.errors.length,
      },
      null,
      2,
    )}\n`,
  );
  return valid ? EXIT.PASS : EXIT.FAIL;
});
