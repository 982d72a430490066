import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import { requires } from "../../../test/helpers/requires.ts";
import { convert, convertExact } from "./convert.ts";
import { COMPOUND_CASES } from "./gnu-compound-cases.ts";
import { parseExact, Rational, toRoundedNumber } from "./rational.ts";
import { UNITS, type Unit } from "./units.ts";

/**
 * Cross-check of every unit pair within each quantity against GNU units (Debian package `units`),
 * which evaluates its own definitions file in IEEE doubles.
 *
 * Tolerance: 1e-12 relative (absolute temperatures: plus 1e-10 absolute, for results near zero
 * such as 32 °F → 0 °C). Double evaluation of a definition chain of a few operations agrees with
 * the exact value to about 1e-15, so 1e-12 leaves a thousandfold margin while staying far below
 * every known difference in definitions (mmHg vs torr 1.4e-7, EC therm 3.9e-6, older CODATA eV
 * values ~1e-9).
 *
 * CI installs GNU units (.ci/run): a missing binary fails there; elsewhere the cross-check is
 * skipped with a line naming the install (test/helpers/requires.ts).
 */
const RELATIVE_TOLERANCE = Rational.parse("1e-12");
const TEMPERATURE_ABSOLUTE_TOLERANCE = Rational.parse("1e-10");

/** GNU units spelling of one unit of each linear unit (a unit name, or an expression of its names). */
const GNU_LINEAR: Record<string, string> = {
  m: "m",
  km: "km",
  cm: "cm",
  mm: "mm",
  um: "um",
  nm: "nm",
  angstrom: "angstrom",
  in: "inch",
  mil: "mil",
  ft: "ft",
  yd: "yd",
  mi: "mile",
  nmi: "nauticalmile",
  kg: "kg",
  g: "g",
  mg: "mg",
  ug: "ug",
  t: "tonne",
  lb: "lb",
  oz: "oz",
  gr: "grain",
  ton_short: "shortton",
  ton_long: "longton",
  slug: "slug",
  N: "N",
  kN: "kN",
  MN: "MN",
  dyn: "dyne",
  kgf: "kgf",
  lbf: "lbf",
  ozf: "oz force",
  kip: "kip",
  pdl: "poundal",
  Pa: "Pa",
  kPa: "kPa",
  MPa: "MPa",
  GPa: "GPa",
  bar: "bar",
  mbar: "mbar",
  atm: "atm",
  at: "technicalatmosphere",
  psi: "psi",
  ksi: "ksi",
  torr: "torr",
  mmHg: "mmHg",
  inHg: "inHg",
  inH2O: "inH2O",
  J: "J",
  kJ: "kJ",
  MJ: "MJ",
  Wh: "Wh",
  kWh: "kWh",
  MWh: "MWh",
  cal_th: "calorie_th",
  cal_IT: "calorie_IT",
  kcal_th: "kcal_th",
  BTU_IT: "btu_IT",
  therm_EC: "ECtherm",
  ft_lbf: "ft lbf",
  eV: "eV",
  erg: "erg",
  W: "W",
  mW: "mW",
  kW: "kW",
  MW: "MW",
  GW: "GW",
  hp: "horsepower",
  hp_metric: "metrichorsepower",
  hp_electric: "electrichorsepower",
  BTU_IT_per_h: "btu_IT/hr",
  ft_lbf_per_s: "ft lbf/s",
  TR: "tonrefrigeration",
  delta_degC: "degC", // GNU's degC, degF are temperature differences
  delta_degF: "degF",
  m3: "m^3",
  L: "liter",
  mL: "mL",
  cm3: "cm^3",
  in3: "in^3",
  ft3: "ft^3",
  yd3: "yd^3",
  gal_US: "usgallon",
  qt_US: "usquart",
  pt_US: "uspint",
  floz_US: "usfloz",
  gal_imp: "brgallon",
  floz_imp: "brfloz",
  bbl_oil: "petroleumbarrel",
};

/** Absolute temperatures are GNU units' nonlinear units: tempC(x) converts from, tempC to. */
const GNU_ABSOLUTE: Record<string, string> = { K: "tempK", degC: "tempC", degF: "tempF", degR: "tempR" };
const TEMPERATURE_SAMPLES: Record<string, string[]> = {
  K: ["0", "233.15", "273.15", "310.65", "1000"],
  // GNU units refuses tempC(-273.15) and tempF(-459.67): in doubles they land a hair below 0 K.
  degC: ["-273.1", "-40", "0", "37.5", "1000"],
  degF: ["-459.6", "-40", "32", "98.6", "451"],
  degR: ["0", "419.67", "491.67", "671.67", "1800"],
};

/** GNU units has no name for these; they are compared through an expression of its own definitions. */
const GNU_EXPRESSIONS = ["ozf", "ft_lbf", "BTU_IT_per_h", "ft_lbf_per_s"];

/**
 * Units GNU units defines differently, with the SI value it uses. The EC therm: GNU units (and
 * pint) define it as 1e5 btu_ISO = 105 506 000 J, the value of Council Directive 80/181/EEC,
 * where units.json has 1e5 BTU_IT = 105 505 585.262 J (3.93e-6 lower). Pairs with it are
 * compared against GNU's value, so any other difference still fails.
 */
const GNU_DEFINES_DIFFERENTLY: Record<string, Rational> = { therm_EC: Rational.parse("105506000") };

const ENV: NodeJS.ProcessEnv = { ...process.env, LC_ALL: "C", LANG: "C" };
delete ENV.UNITSFILE;
delete ENV.MYUNITSFILE;
/** Only the standard definitions file (-f ''), no history file, terse, full double precision. */
const GNU_ARGS = ["-f", "", "-H", "", "-t", "-o", "%.17g"];

function gnuUnitsVersion(): string | undefined {
  const run = spawnSync("units", ["-V"], { encoding: "utf8", env: ENV });
  if (run.error || run.status !== 0 || !/GNU Units/i.test(run.stdout)) return undefined;
  return run.stdout.split("\n")[0]?.trim();
}

/** Runs GNU units once on many (have, want) pairs: one output line per pair. */
function gnuConvertMany(pairs: readonly [string, string][]): string[] {
  const input = pairs.map(([have, want]) => `${have}\n${want}\n`).join("");
  const run = spawnSync("units", GNU_ARGS, {
    input,
    encoding: "utf8",
    env: ENV,
    maxBuffer: 64 * 1024 * 1024,
  });
  if (run.error) throw run.error;
  const lines = run.stdout.split("\n").filter((line) => line.trim() !== "");
  if (lines.length !== pairs.length) {
    throw new Error(
      `GNU units answered ${lines.length} lines for ${pairs.length} conversions:\n${run.stdout}${run.stderr}`,
    );
  }
  const bad = lines.findIndex((line) => !Number.isFinite(Number(line)));
  if (bad >= 0) throw new Error(`GNU units on ${JSON.stringify(pairs[bad])}: ${lines[bad]}`);
  return lines.map((line) => line.trim());
}

const knows = new Map<string, boolean>();
/** GNU units knows a unit if it converts one of it to the SI unit of the domain (asked once per unit). */
function gnuKnows(u: Unit): boolean {
  let known = knows.get(u.id);
  if (known === undefined) {
    const si = u.domain.si === "m³" ? "m^3" : u.domain.si;
    const run = spawnSync("units", [...GNU_ARGS, GNU_LINEAR[u.id] as string, si], {
      encoding: "utf8",
      env: ENV,
    });
    known = run.status === 0 && Number.isFinite(Number(run.stdout.trim()));
    knows.set(u.id, known);
  }
  return known;
}

const unit = (id: string) => UNITS.get(id) as Unit;

const version = gnuUnitsVersion();
const gnuUnits = requires(
  "GNU units",
  () => (version ? undefined : "`units -V` does not answer GNU Units"),
  "apt-get install units",
);

describe("GNU units is available where the cross-check must run", () => {
  it.skipIf(gnuUnits.skip)("GNU units answers `units -V`", () => gnuUnits.check());
});

describe.runIf(gnuUnits.missing === undefined)("cross-check against GNU units", () => {
  const scaleForGnu = (u: Unit) => GNU_DEFINES_DIFFERENTLY[u.id] ?? u.scale;

  it("maps every one of the 92 units, and GNU units knows each mapping", () => {
    expect(Object.keys({ ...GNU_LINEAR, ...GNU_ABSOLUTE }).sort()).toEqual(
      UNITS.units.map((u) => u.id).sort(),
    );
    const unknown = UNITS.units
      .filter((u) => GNU_LINEAR[u.id] !== undefined)
      .filter((u) => !gnuKnows(u))
      .map((u) => u.id);
    // Any unit GNU units does not know is skipped below; with GNU units 2.22 there is none.
    if (unknown.length > 0) console.warn(`note: GNU units ${version} does not know: ${unknown.join(", ")}`);
    expect(unknown.length).toBeLessThanOrEqual(4);
  });

  it("agrees on every pair of linear units within each quantity to 1e-12 relative", () => {
    const linear = UNITS.units.filter((u) => GNU_LINEAR[u.id] !== undefined);
    const known = linear.filter(gnuKnows);
    const pairs: [Unit, Unit][] = [];
    for (const a of known)
      for (const b of known) if (a !== b && a.quantity === b.quantity) pairs.push([a, b]);
    const answers = gnuConvertMany(
      pairs.map(([a, b]) => [`1 ${GNU_LINEAR[a.id]}`, GNU_LINEAR[b.id] as string]),
    );

    let worst = 0;
    let differentlyDefined = 0;
    const failures: string[] = [];
    pairs.forEach(([a, b], index) => {
      const gnu = Rational.parse(answers[index] as string);
      const expected = scaleForGnu(a).div(scaleForGnu(b));
      const deviation = gnu.sub(expected).abs().div(expected);
      worst = Math.max(worst, toRoundedNumber(deviation, 3));
      if (deviation.compare(RELATIVE_TOLERANCE) > 0) failures.push(`${a.id}→${b.id}: GNU ${answers[index]}`);
      if (GNU_DEFINES_DIFFERENTLY[a.id] || GNU_DEFINES_DIFFERENTLY[b.id]) {
        differentlyDefined++;
        // Against the table itself, those pairs differ by exactly the definition.
        const ours = a.scale.div(b.scale);
        expect(gnu.sub(ours).abs().div(ours).compare(Rational.parse("1e-6"))).toBe(1);
      }
    });
    expect(failures).toEqual([]);
    expect(pairs.length).toBe(13 * 12 + 11 * 10 + 9 * 8 + 14 * 13 + 14 * 13 + 11 * 10 + 2 * 1 + 14 * 13);
    expect(differentlyDefined).toBe(2 * 13);
    console.log(
      `GNU units cross-check (${version}): ${pairs.length} linear pairs, worst relative deviation ` +
        `${worst.toExponential(2)}; ${differentlyDefined} pairs with therm_EC compared against GNU's ` +
        `ECtherm (1.05506e8 J); named through expressions: ${GNU_EXPRESSIONS.join(", ")}`,
    );
  });

  it("agrees on every pair of absolute temperature scales at five temperatures each", () => {
    const scales = Object.keys(GNU_ABSOLUTE).map(unit);
    const cases: { a: Unit; b: Unit; value: string }[] = [];
    for (const a of scales) {
      for (const b of scales) {
        if (a === b) continue;
        for (const value of TEMPERATURE_SAMPLES[a.id] as string[]) cases.push({ a, b, value });
      }
    }
    const answers = gnuConvertMany(
      cases.map(({ a, b, value }) => [`${GNU_ABSOLUTE[a.id]}(${value})`, GNU_ABSOLUTE[b.id] as string]),
    );
    const failures: string[] = [];
    cases.forEach(({ a, b, value }, index) => {
      const gnu = Rational.parse(answers[index] as string);
      const expected = convertExact(Rational.parse(value), a, b);
      const allowed = expected.abs().mul(RELATIVE_TOLERANCE).add(TEMPERATURE_ABSOLUTE_TOLERANCE);
      if (gnu.sub(expected).abs().compare(allowed) > 0) {
        failures.push(`${value} ${a.id}→${b.id}: GNU ${answers[index]}, exact ${expected}`);
      }
    });
    expect(failures).toEqual([]);
    expect(cases).toHaveLength(4 * 3 * 5);
  });

  it("agrees on compound expressions (issue 18): kg/m^3, W/(m·K), L/min, N·m, … to 1e-12 relative", () => {
    const answers = gnuConvertMany(COMPOUND_CASES.map((c) => [`${c.value} ${c.gnuFrom}`, c.gnuTo]));
    const failures: string[] = [];
    COMPOUND_CASES.forEach((c, index) => {
      const ours = parseExact(convert(c).resultExact);
      const gnu = Rational.parse(answers[index] as string);
      if (gnu.sub(ours).abs().compare(ours.abs().mul(RELATIVE_TOLERANCE)) > 0) {
        failures.push(`${c.value} ${c.from} → ${c.to}: ours ${ours}, GNU ${answers[index]}`);
      }
    });
    expect(failures).toEqual([]);
  });
});
