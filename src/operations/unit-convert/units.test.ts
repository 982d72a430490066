import { createHash } from "node:crypto";
import fs from "node:fs";
import { describe, expect, it } from "vitest";
import { canonicalJson } from "../../canonical-json.ts";
import { formatExact, Rational, roundSignificant } from "./rational.ts";
import {
  editDistance,
  nameKey,
  UNIT_TABLE_URL,
  UNITS,
  type Unit,
  UnitTable,
  type UnitTableFile,
  unitKey,
} from "./units.ts";

const q = (text: string) => Rational.parse(text);
const tableFile = (): UnitTableFile => JSON.parse(fs.readFileSync(UNIT_TABLE_URL, "utf8"));
const unit = (id: string) => UNITS.get(id) as Unit;

/**
 * Every factor rebuilt from the defining constants of units.md (1959 yard and pound, g_n, IT and
 * thermochemical calories, atm, conventional mercury and water, e, the imperial and US gallons),
 * independently of the table: [scale, offset] to SI.
 */
function definitions(): Record<string, [Rational, Rational?]> {
  const m = q("1");
  const inch = q("0.0254");
  const ft = inch.mul(q("12"));
  const yd = ft.mul(q("3"));
  const lb = q("0.45359237");
  const gn = q("9.80665");
  const lbf = lb.mul(gn);
  const kgf = gn;
  const calIT = q("4.1868");
  const btuIT = calIT.mul(q("1000")).mul(lb).mul(q("5/9")); // cal_IT/(g·°C) × lb × (5/9 °C/°F)
  const hour = q("3600");
  const galUS = inch.mul(inch).mul(inch).mul(q("231"));
  const galImp = q("0.00454609");
  const times = (a: Rational, b: string) => a.mul(q(b));
  const per = (a: Rational, b: Rational) => a.div(b);
  const linear = (value: Rational): [Rational] => [value];
  return {
    m: linear(m),
    km: linear(q("1000")),
    cm: linear(q("0.01")),
    mm: linear(q("0.001")),
    um: linear(q("1e-6")),
    nm: linear(q("1e-9")),
    angstrom: linear(q("1e-10")),
    in: linear(inch),
    mil: linear(times(inch, "0.001")),
    ft: linear(ft),
    yd: linear(yd),
    mi: linear(times(ft, "5280")),
    nmi: linear(q("1852")),
    kg: linear(q("1")),
    g: linear(q("0.001")),
    mg: linear(q("1e-6")),
    ug: linear(q("1e-9")),
    t: linear(q("1000")),
    lb: linear(lb),
    oz: linear(times(lb, "1/16")),
    gr: linear(times(lb, "1/7000")),
    ton_short: linear(times(lb, "2000")),
    ton_long: linear(times(lb, "2240")),
    slug: linear(per(lbf, ft)), // lbf·s²/ft
    N: linear(q("1")),
    kN: linear(q("1000")),
    MN: linear(q("1e6")),
    dyn: linear(q("1e-5")),
    kgf: linear(kgf),
    lbf: linear(lbf),
    ozf: linear(times(lbf, "1/16")),
    kip: linear(times(lbf, "1000")),
    pdl: linear(lb.mul(ft)),
    Pa: linear(q("1")),
    kPa: linear(q("1e3")),
    MPa: linear(q("1e6")),
    GPa: linear(q("1e9")),
    bar: linear(q("1e5")),
    mbar: linear(q("100")),
    atm: linear(q("101325")),
    at: linear(per(kgf, q("0.0001"))), // kgf/cm²
    psi: linear(per(lbf, inch.mul(inch))),
    ksi: linear(per(times(lbf, "1000"), inch.mul(inch))),
    torr: linear(q("101325/760")),
    mmHg: linear(q("13595.1").mul(gn).mul(q("0.001"))), // ρ_Hg × g_n × 1 mm
    inHg: linear(q("13595.1").mul(gn).mul(inch)),
    inH2O: linear(q("1000").mul(gn).mul(inch)),
    J: linear(q("1")),
    kJ: linear(q("1e3")),
    MJ: linear(q("1e6")),
    Wh: linear(hour),
    kWh: linear(times(hour, "1e3")),
    MWh: linear(times(hour, "1e6")),
    cal_th: linear(q("4.184")),
    cal_IT: linear(calIT),
    kcal_th: linear(q("4184")),
    BTU_IT: linear(btuIT),
    therm_EC: linear(times(btuIT, "100000")),
    ft_lbf: linear(ft.mul(lbf)),
    eV: linear(q("1.602176634e-19")),
    erg: linear(q("1e-7")),
    W: linear(q("1")),
    mW: linear(q("1e-3")),
    kW: linear(q("1e3")),
    MW: linear(q("1e6")),
    GW: linear(q("1e9")),
    hp: linear(times(ft.mul(lbf), "550")),
    hp_metric: linear(times(kgf, "75")),
    hp_electric: linear(q("746")),
    BTU_IT_per_h: linear(per(btuIT, hour)),
    ft_lbf_per_s: linear(ft.mul(lbf)),
    TR: linear(per(times(btuIT, "12000"), hour)),
    // T/K = t/°C + 273.15; t/°C = (t/°F − 32)/1.8; T/K = (T/°R)/1.8
    K: [q("1"), q("0")],
    degC: [q("1"), q("273.15")],
    degF: [q("5/9"), q("273.15").sub(q("32").mul(q("5/9")))],
    degR: [q("5/9"), q("0")],
    delta_degC: [q("1"), q("0")],
    delta_degF: [q("5/9"), q("0")],
    m3: linear(q("1")),
    L: linear(q("0.001")),
    mL: linear(q("1e-6")),
    cm3: linear(q("0.01").mul(q("0.01")).mul(q("0.01"))),
    in3: linear(inch.mul(inch).mul(inch)),
    ft3: linear(ft.mul(ft).mul(ft)),
    yd3: linear(yd.mul(yd).mul(yd)),
    gal_US: linear(galUS),
    qt_US: linear(times(galUS, "1/4")),
    pt_US: linear(times(galUS, "1/8")),
    floz_US: linear(times(galUS, "1/128")),
    gal_imp: linear(galImp),
    floz_imp: linear(times(galImp, "1/160")),
    bbl_oil: linear(times(galUS, "42")),
  };
}

/** units.json prints repeating factors to 20 significant digits ("6894.7572931683613367"). */
function twentyDigits(value: Rational): string {
  const { mantissa, exponent } = roundSignificant(value, 20);
  return Rational.of(mantissa)
    .mul(Rational.parse(`1e${exponent}`))
    .toFractionString();
}

describe("the unit table (data/units.json)", () => {
  it("holds the 92 units in 8 domains of units.md", () => {
    expect(UNITS.units).toHaveLength(92);
    const perDomain = Object.fromEntries(
      UNITS.domains.map((domain) => [domain.id, UNITS.units.filter((u) => u.domain === domain).length]),
    );
    expect(perDomain).toEqual({
      length: 13,
      mass: 11,
      force: 9,
      pressure: 14,
      energy: 14,
      power: 11,
      temperature: 6,
      volume: 14,
    });
  });

  it("every one of the 92 factors equals its derivation from the defining constants, exactly", () => {
    const derived = definitions();
    expect(Object.keys(derived).sort()).toEqual(UNITS.units.map((u) => u.id).sort());
    for (const u of UNITS.units) {
      const [scale, offset = Rational.ZERO] = derived[u.id] as [Rational, Rational?];
      expect(u.scale.toFractionString(), u.id).toBe(scale.toFractionString());
      expect(u.offset.toFractionString(), u.id).toBe(offset.toFractionString());
    }
  });

  it("every factor's decimal in units.json agrees with its exact fraction", () => {
    for (const record of tableFile().units) {
      const pairs: [string | undefined, string | undefined][] = [
        [record.factor, record.factorDecimal],
        [record.scale, record.scaleDecimal],
        [record.offset, record.offsetDecimal],
      ];
      for (const [fraction, decimal] of pairs) {
        if (fraction === undefined) continue;
        const exact = q(fraction);
        expect(decimal, record.id).toBeDefined();
        if (exact.isTerminating()) expect(q(decimal as string).equals(exact), record.id).toBe(true);
        else expect(q(decimal as string).toFractionString(), record.id).toBe(twentyDigits(exact));
      }
      if (record.terminating !== undefined) {
        expect(record.terminating, record.id).toBe(q(record.factor as string).isTerminating());
      }
    }
  });

  it("keeps every field of the reference table unchanged (sha256 of the reference copy)", () => {
    // The digest of shared/reference/units.json (RFC 8785 form) taken when the table was copied:
    // the repository must not need the reference folder, yet any drift in a copied field fails here.
    const copied = tableFile().units.map((record) => {
      const { symbol, aliases, names, kind, ...rest } = record;
      return rest;
    });
    expect(createHash("sha256").update(canonicalJson(copied)).digest("hex")).toBe(
      "c2b19ba92d3a90bd1b9ed99775b90a87f9c4673e5d3d26132704109af14de21b",
    );
  });

  it("the repeating factors are the ones units.md names", () => {
    const repeating = UNITS.units.filter((u) => !u.scale.isTerminating() || !u.offset.isTerminating());
    expect(repeating.map((u) => u.id)).toEqual([
      "slug",
      "psi",
      "ksi",
      "torr",
      "BTU_IT_per_h",
      "TR",
      "degF",
      "degR",
      "delta_degF",
    ]);
    // units.md says "12 of the 92 factors are repeating" but names these nine (slug, psi, ksi, torr,
    // BTU_IT/h, TR, °F, °R, Δ°F); the exact fractions agree with the names.
  });
});

describe("resolving units", () => {
  it("resolves every id, symbol and alias case-sensitively, and every name in any case", () => {
    for (const u of UNITS.units) {
      for (const text of [u.id, u.symbol, ...u.aliases]) {
        expect(UNITS.resolve(text), text).toEqual({ kind: "unit", unit: u });
      }
      for (const text of u.names) {
        for (const variant of [text, text.toUpperCase(), text.toLowerCase()]) {
          expect(UNITS.resolve(variant), variant).toEqual({ kind: "unit", unit: u });
        }
      }
    }
  });

  it.each([
    ["°C", "degC"],
    ["℃", "degC"],
    ["° C", "degC"],
    ["degC", "degC"],
    ["deg C", "degC"],
    ["Celsius", "degC"],
    ["degrees Celsius", "degC"],
    ["°F", "degF"],
    ["℉", "degF"],
    ["Δ°C", "delta_degC"],
    ["ΔK", "delta_degC"],
    ["delta_degF", "delta_degF"],
    ["Δ°R", "delta_degF"],
    ["psi", "psi"],
    ["PSI", "psi"],
    ["lbf/in^2", "psi"],
    ["lbf/in²", "psi"],
    ["lbf / in2", "psi"],
    ["lbf/in**2", "psi"],
    ["Pounds per square inch", "psi"],
    ["kWh", "kWh"],
    ["kW·h", "kWh"],
    ["kW h", "kWh"],
    ["kW*h", "kWh"],
    ["kW-h", "kWh"],
    ["kW⋅h", "kWh"],
    ["Kilowatt-hours", "kWh"],
    ["BTU_IT", "BTU_IT"],
    ["Btu_IT", "BTU_IT"],
    ["BTU (IT)", "BTU_IT"],
    ["µm", "um"], // U+00B5 micro sign
    ["μm", "um"], // U+03BC Greek mu
    ["micron", "um"],
    ["Å", "angstrom"], // U+212B angstrom sign
    ["Å", "angstrom"], // U+00C5
    ["m³", "m3"],
    ["m^3", "m3"],
    ["ℓ", "L"],
    ["l", "L"],
    ["cc", "cm3"],
    ["inH₂O", "inH2O"],
    ["in H2O", "inH2O"],
    ["mm Hg", "mmHg"],
    ["Torr", "torr"],
    ["hPa", "mbar"],
    ["N/mm²", "MPa"],
    ["kgf/cm²", "at"],
    ["ft·lbf", "ft_lbf"],
    ["ft-lbf", "ft_lbf"],
    ["ft lbf/s", "ft_lbf_per_s"],
    ["PS", "hp_metric"],
    ["tonne", "t"],
    ["metric ton", "t"],
    ["short ton", "ton_short"],
    ["Long Tons", "ton_long"],
    ["ton of refrigeration", "TR"],
    ["US gal", "gal_US"],
    ["gal (US)", "gal_US"],
    ["imperial gallon", "gal_imp"],
    ["UK fl oz", "floz_imp"],
    ["oil barrel", "bbl_oil"],
    ["bbl (oil)", "bbl_oil"],
    ["  kPa  ", "kPa"],
    ["ｋＰａ", "kPa"], // full-width letters
  ])("%s → %s", (text, id) => {
    expect(UNITS.resolve(text)).toEqual({ kind: "unit", unit: unit(id) });
  });

  it("keeps letter case in symbols: mW ≠ MW, and no guessing at Mbar, KWH or kpa", () => {
    expect(UNITS.resolve("mW")).toEqual({ kind: "unit", unit: unit("mW") });
    expect(UNITS.resolve("MW")).toEqual({ kind: "unit", unit: unit("MW") });
    expect(UNITS.resolve("mbar")).toEqual({ kind: "unit", unit: unit("mbar") });
    for (const text of ["Mbar", "KWH", "kpa", "mw", "MPA", "kn"])
      expect(UNITS.resolve(text).kind, text).toBe("unknown");
  });

  it.each([
    ["BTU", ["BTU_IT"]],
    ["Btu", ["BTU_IT"]],
    ["btu", ["BTU_IT"]],
    ["British thermal units", ["BTU_IT"]],
    ["BTU/h", ["BTU_IT_per_h"]],
    ["Btu/hr", ["BTU_IT_per_h"]],
    ["ton", ["t", "ton_short", "ton_long", "TR"]],
    ["Tons", ["t", "ton_short", "ton_long", "TR"]],
    ["therm", ["therm_EC"]],
    ["thm", ["therm_EC"]],
    ["gallon", ["gal_US", "gal_imp"]],
    ["gal", ["gal_US", "gal_imp"]],
    ["Gallons", ["gal_US", "gal_imp"]],
    ["quart", ["qt_US"]],
    ["pt", ["pt_US"]],
    ["fl oz", ["floz_US", "floz_imp"]],
    ["fluid ounces", ["floz_US", "floz_imp"]],
    ["bbl", ["bbl_oil"]],
    ["barrel", ["bbl_oil"]],
    ["horsepower", ["hp", "hp_metric", "hp_electric"]],
    ["HP", ["hp", "hp_metric", "hp_electric"]],
    ["cal", ["cal_th", "cal_IT", "kcal_th"]],
    ["Cal", ["cal_th", "cal_IT", "kcal_th"]],
    ["calories", ["cal_th", "cal_IT", "kcal_th"]],
    ["kcal", ["kcal_th"]],
    ["C", ["degC", "delta_degC"]],
    ["F", ["degF", "delta_degF"]],
    ["R", ["degR", "delta_degF"]],
    ["NM", ["nmi", "nm"]],
  ])("%s is ambiguous: %j", (text, choices) => {
    const resolution = UNITS.resolve(text);
    expect(resolution.kind).toBe("ambiguous");
    if (resolution.kind === "ambiguous") expect(resolution.entry.choices.map((u) => u.id)).toEqual(choices);
  });

  it("canonical ids win over the ambiguity list (hp is mechanical, oz avoirdupois, t the tonne)", () => {
    for (const id of ["hp", "oz", "t", "mil", "at", "lb", "bar"]) {
      expect(UNITS.resolve(id)).toEqual({ kind: "unit", unit: unit(id) });
    }
  });

  it.each([
    ["kpa", ["kPa"]],
    ["KWH", ["kWh"]],
    ["Mbar", ["mbar"]],
    ["kilowat hour", ["kWh"]],
    ["farenheit", ["degF"]],
    ["celcius", ["degC"]],
    ["psig", ["psi"]],
    ["inchs", ["in"]],
    ["nautical mille", ["nmi"]],
    ["galon", ["gal_US", "gal_imp"]],
  ])("an unknown %s suggests %j first", (text, first) => {
    const resolution = UNITS.resolve(text);
    expect(resolution.kind).toBe("unknown");
    if (resolution.kind === "unknown") {
      expect(resolution.suggestions.slice(0, first.length).map((u) => u.id)).toEqual(first);
      expect(resolution.suggestions.length).toBeLessThanOrEqual(5);
    }
  });

  it("treats any text as data: prototype names are unknown units", () => {
    for (const text of ["__proto__", "constructor", "toString", "hasOwnProperty"]) {
      expect(UNITS.resolve(text).kind, text).toBe("unknown");
    }
  });

  it("suggests nothing for a name far from every unit", () => {
    for (const text of ["x", "furlong", "parsec", "xyzzy"]) {
      const resolution = UNITS.resolve(text);
      expect(resolution).toMatchObject({ kind: "unknown", suggestions: [] });
    }
  });

  it("normalises formatting only", () => {
    expect(unitKey(" lbf / in ^ 2 ")).toBe("lbf/in2");
    expect(unitKey("kW  ×  h")).toBe("kW·h");
    expect(unitKey("gal (US)")).toBe("gal(US)");
    expect(nameKey("Kilowatt-Hour")).toBe(nameKey("kilowatt hour"));
    expect(nameKey("fl. oz.")).toBe("floz");
  });

  it("measures edit distance with transpositions, cut off above the limit", () => {
    expect(editDistance("kpa", "kpa", 1)).toBe(0);
    expect(editDistance("psi", "pis", 1)).toBe(1);
    expect(editDistance("celcius", "celsius", 2)).toBe(1);
    expect(editDistance("abcdef", "uvwxyz", 2)).toBe(3);
  });
});

describe("the table refuses contradictions at start-up", () => {
  const broken = (change: (file: UnitTableFile) => void) => {
    const file = tableFile();
    change(file);
    return () => new UnitTable(file);
  };
  const byId = (file: UnitTableFile, id: string) =>
    file.units.find((u) => u.id === id) as UnitTableFile["units"][number];

  it("loads the shipped table", () => {
    expect(() => new UnitTable(tableFile())).not.toThrow();
  });

  it("an alias claimed by two units", () => {
    expect(
      broken((file) => {
        byId(file, "mW").aliases.push("MW");
      }),
    ).toThrow(/claimed twice/);
  });

  it("a name claimed by two units", () => {
    expect(
      broken((file) => {
        byId(file, "ft").names.push("Metre");
      }),
    ).toThrow(/claimed twice/);
  });

  it("an ambiguous name that is also a unit's symbol or name", () => {
    expect(broken((file) => file.ambiguous.push({ terms: ["psi"], choices: ["psi"] }))).toThrow(
      /also a unit/,
    );
    expect(broken((file) => file.ambiguous.push({ names: ["feet"], choices: ["ft"] }))).toThrow(
      /also a unit/,
    );
  });

  it("an ambiguous choice that is no unit", () => {
    expect(broken((file) => file.ambiguous.push({ names: ["stone"], choices: ["st"] }))).toThrow(
      /not a unit/,
    );
  });

  it("a unit whose SI unit is not its domain's, or whose factor is not positive", () => {
    expect(
      broken((file) => {
        byId(file, "km").si = "ft";
      }),
    ).toThrow(/SI unit/);
    expect(
      broken((file) => {
        byId(file, "km").factor = "0";
      }),
    ).toThrow(/positive/);
  });

  it("a temperature kind outside the temperature domain, or an interval with an offset", () => {
    expect(
      broken((file) => {
        byId(file, "km").kind = "interval";
      }),
    ).toThrow(/temperature units only/);
    expect(
      broken((file) => {
        byId(file, "delta_degC").offset = "1";
      }),
    ).toThrow(/no offset/);
  });
});

describe("exact factors in the resultExact notation", () => {
  it.each([
    ["in", "0.0254"],
    ["lbf", "4.4482216152605"],
    ["BTU_IT", "1055.05585262"],
    ["eV", "0.0000000000000000001602176634"],
    ["torr", "133.322(368421052631578947)"],
    ["TR", "3516.8528420(6)"],
    ["degF", "0.(5)"],
    ["psi", "8896443230521/1290320000"],
    ["slug", "14.593902937206(364829396325459317585301837270341207349081)"],
  ])("%s = %s", (id, text) => {
    expect(formatExact(unit(id).scale)).toBe(text);
  });
});
