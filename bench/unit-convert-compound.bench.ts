/**
 * unit-convert on compound expressions against GNU units, side by side in one run: every case of
 * src/operations/unit-convert/gnu-compound-cases.ts converted exactly here and by GNU units
 * (`units -t 'value have' 'want'`, IEEE doubles), with the relative deviation between them, and the time per
 * conversion of each (GNU units: one process answering all cases, so its start-up is amortised over them).
 * Writes bench/results/unit-convert-compound.json. Needs the `units` binary (Debian package `units`).
 */
import { spawnSync } from "node:child_process";
import { clearResolutionCache, convert } from "../src/operations/unit-convert/convert.ts";
import { COMPOUND_CASES } from "../src/operations/unit-convert/gnu-compound-cases.ts";
import { parseExact, Rational, toRoundedNumber } from "../src/operations/unit-convert/rational.ts";
import { type BenchRow, report, timePerRun } from "./lib.ts";

const ENV: NodeJS.ProcessEnv = { ...process.env, LC_ALL: "C", LANG: "C" };
delete ENV.UNITSFILE;
delete ENV.MYUNITSFILE;
const GNU_ARGS = ["-f", "", "-H", "", "-t", "-o", "%.17g"];

const version = spawnSync("units", ["-V"], { encoding: "utf8", env: ENV }).stdout?.split("\n")[0]?.trim();
if (!version) throw new Error("GNU units is not installed (apt-get install units)");

const input = COMPOUND_CASES.map((c) => `${c.value} ${c.gnuFrom}\n${c.gnuTo}\n`).join("");
const runGnu = () => spawnSync("units", GNU_ARGS, { input, env: ENV, encoding: "utf8" }).stdout;
const answers = runGnu()
  .split("\n")
  .filter((line) => line.trim() !== "");
if (answers.length !== COMPOUND_CASES.length) throw new Error(`GNU units answered ${answers.length} lines`);

const rows: BenchRow[] = COMPOUND_CASES.map((c, index) => {
  const ours = convert(c);
  const exact = parseExact(ours.resultExact);
  const gnu = Rational.parse(answers[index] as string);
  const deviation = exact.isZero() ? 0 : toRoundedNumber(gnu.sub(exact).abs().div(exact.abs()), 2);
  return {
    conversion: `${c.value} ${c.from} → ${c.to}`,
    "utility402 result": ours.result,
    "utility402 resultExact": ours.resultExact,
    "GNU units (units -t)": `${c.gnuFrom} → ${c.gnuTo}: ${answers[index]}`,
    "relative deviation": deviation,
  };
});

// Uncached: every unit text parsed again (the resolution cache forgotten before each pass); cached: repeated texts.
const oursColdMs = timePerRun(() => {
  clearResolutionCache();
  for (const c of COMPOUND_CASES) convert(c);
}, 200);
const oursMs = timePerRun(() => {
  for (const c of COMPOUND_CASES) convert(c);
}, 200);
const gnuMs = timePerRun(runGnu, 5, 1);
const worst = Math.max(...rows.map((row) => row["relative deviation"] as number));

report("unit-convert-compound", rows, {
  gnuUnits: version,
  cases: COMPOUND_CASES.length,
  worstRelativeDeviation: worst,
  microsecondsPerConversion: {
    utility402ExactUncached: Number(((oursColdMs * 1000) / COMPOUND_CASES.length).toFixed(1)),
    utility402ExactCached: Number(((oursMs * 1000) / COMPOUND_CASES.length).toFixed(1)),
    gnuUnitsOneProcessForAll: Number(((gnuMs * 1000) / COMPOUND_CASES.length).toFixed(1)),
  },
});
console.log(
  `worst relative deviation ${worst.toExponential(2)} over ${COMPOUND_CASES.length} cases; ` +
    `µs per conversion: utility402 ${((oursColdMs * 1000) / COMPOUND_CASES.length).toFixed(1)} uncached, ` +
    `${((oursMs * 1000) / COMPOUND_CASES.length).toFixed(1)} with the units' resolutions cached (exact rationals), ` +
    `GNU units ${((gnuMs * 1000) / COMPOUND_CASES.length).toFixed(1)} (one process for all cases, start-up included)`,
);
