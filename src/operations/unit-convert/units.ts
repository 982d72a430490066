import fs from "node:fs";
import { z } from "zod";
import { Rational } from "./rational.ts";

/**
 * The unit table the service ships (data/units.json): the 92 units of the reference table with
 * their exact factors, plus the symbols, aliases, names and ambiguity notes authored for the
 * service. Read and checked once at start-up; a malformed or self-contradicting table stops
 * the service with the reason.
 */
export const UNIT_TABLE_URL = new URL("../../../data/units.json", import.meta.url);

export const DOMAIN_IDS = [
  "length",
  "mass",
  "force",
  "pressure",
  "energy",
  "power",
  "temperature",
  "volume",
] as const;
export type DomainId = (typeof DOMAIN_IDS)[number];

const ExactNumber = z.string().regex(/^-?\d+(\/\d+)?$/, "an exact rational: an integer or p/q");

const UnitRecord = z.strictObject({
  domain: z.enum(DOMAIN_IDS),
  id: z.string().regex(/^[A-Za-z][A-Za-z0-9_]*$/),
  name: z.string().min(1),
  si: z.string().min(1),
  // Reference fields: linear units carry a factor, temperature units a scale and an offset.
  factor: ExactNumber.optional(),
  factorDecimal: z.string().optional(),
  terminating: z.boolean().optional(),
  scale: ExactNumber.optional(),
  offset: ExactNumber.optional(),
  scaleDecimal: z.string().optional(),
  offsetDecimal: z.string().optional(),
  // Authored fields.
  kind: z.enum(["absolute", "interval"]).optional(),
  symbol: z.string().min(1),
  aliases: z.array(z.string().min(1)),
  names: z.array(z.string().min(1)),
});

const AmbiguousRecord = z.strictObject({
  terms: z.array(z.string().min(1)).optional(),
  names: z.array(z.string().min(1)).optional(),
  choices: z.array(z.string()).min(1),
  notOffered: z.string().optional(),
});

const TableFile = z.strictObject({
  $comment: z.string().optional(),
  domains: z.array(
    z.strictObject({ id: z.enum(DOMAIN_IDS), si: z.string().min(1), dimension: z.string().min(1) }),
  ),
  units: z.array(UnitRecord),
  ambiguous: z.array(AmbiguousRecord),
});
export type UnitTableFile = z.infer<typeof TableFile>;

export interface Domain {
  id: DomainId;
  /** The SI unit every factor of the domain converts to. */
  si: string;
  /** Exponents of L, M, T, Θ in ISO 80000 order, e.g. "L^-1·M·T^-2". */
  dimension: string;
}

export interface Unit {
  id: string;
  name: string;
  domain: Domain;
  /** What the unit measures; only units of the same quantity convert into each other. */
  quantity: string;
  symbol: string;
  aliases: readonly string[];
  names: readonly string[];
  /** SI value = scale × value + offset (offset ≠ 0 only for °C and °F). */
  scale: Rational;
  offset: Rational;
}

export interface AmbiguousName {
  terms: readonly string[];
  names: readonly string[];
  choices: readonly Unit[];
  notOffered?: string;
}

export type Resolution =
  | { kind: "unit"; unit: Unit }
  | { kind: "ambiguous"; text: string; entry: AmbiguousName }
  | { kind: "unknown"; text: string; suggestions: readonly Unit[] };

/**
 * Formatting is never meaning: the key ignores Unicode compatibility forms (NFKC: µ/μ, ², ³, ₂,
 * ℃, ℉, Å, ℓ, full-width letters), surrounding and repeated spaces, "^" and "**" before
 * exponents, and which multiplication sign joins two units (space, "-", "*", "·", "×", "⋅").
 * Letter case is kept: mW and MW, mbar and Mbar are different units.
 */
export function unitKey(text: string): string {
  return text
    .normalize("NFKC")
    .trim()
    .replace(/\s*(?:\*\*|\^)\s*/g, "")
    .replace(/°\s+/g, "°")
    .replace(/[\s·⋅•∙×*-]+/g, "·")
    .replace(/·?([/()[\]])·?/g, "$1");
}

/** Key of a spelled-out name: a unit key without case, separators or dots ("Kilowatt-hour" = "kilowatt hour"). */
export const nameKey = (text: string) => unitKey(text).toLowerCase().replace(/[·.]/g, "");

const quantityOf = (domain: DomainId, kind: "absolute" | "interval" | undefined) =>
  domain !== "temperature" ? domain : kind === "interval" ? "temperature interval" : "absolute temperature";

export class UnitTable {
  readonly domains: readonly Domain[];
  readonly units: readonly Unit[];
  readonly ambiguous: readonly AmbiguousName[];
  private readonly byId = new Map<string, Unit>();
  private readonly byKey = new Map<string, Unit>();
  private readonly byName = new Map<string, Unit>();
  private readonly ambiguousByKey = new Map<string, AmbiguousName>();
  private readonly ambiguousByName = new Map<string, AmbiguousName>();
  /** Every spelling, for close-match suggestions. */
  private readonly spellings: { key: string; units: readonly Unit[] }[] = [];

  constructor(file: UnitTableFile) {
    const domains = new Map<DomainId, Domain>();
    for (const domain of file.domains) {
      if (domains.has(domain.id)) throw new Error(`domain ${domain.id} is listed twice`);
      domains.set(domain.id, domain);
    }
    this.domains = [...domains.values()];

    const claim = <T>(map: Map<string, T>, key: string, value: T, what: string) => {
      const previous = map.get(key);
      if (previous !== undefined && previous !== value) throw new Error(`${what} "${key}" is claimed twice`);
      map.set(key, value);
    };

    this.units = file.units.map((record) => {
      const domain = domains.get(record.domain);
      if (!domain) throw new Error(`unit ${record.id}: domain ${record.domain} is not listed`);
      if (record.si !== domain.si) throw new Error(`unit ${record.id}: SI unit ${record.si} ≠ ${domain.si}`);
      const isTemperature = record.domain === "temperature";
      if (isTemperature !== (record.kind !== undefined)) {
        throw new Error(`unit ${record.id}: kind (absolute | interval) is for temperature units only`);
      }
      const scaleText = isTemperature ? record.scale : record.factor;
      if (scaleText === undefined)
        throw new Error(`unit ${record.id}: no ${isTemperature ? "scale" : "factor"}`);
      const scale = Rational.parse(scaleText);
      const offset = Rational.parse(isTemperature ? (record.offset ?? "0") : "0");
      if (scale.sign() <= 0) throw new Error(`unit ${record.id}: the factor must be positive`);
      if (record.kind === "interval" && !offset.isZero()) {
        throw new Error(`unit ${record.id}: an interval unit has no offset`);
      }
      const unit: Unit = {
        id: record.id,
        name: record.name,
        domain,
        quantity: quantityOf(record.domain, record.kind),
        symbol: record.symbol,
        aliases: record.aliases,
        names: record.names,
        scale,
        offset,
      };
      claim(this.byId, unit.id, unit, "unit id");
      for (const text of [unit.id, unit.symbol, ...unit.aliases])
        claim(this.byKey, unitKey(text), unit, "symbol");
      for (const text of unit.names) claim(this.byName, nameKey(text), unit, "name");
      return unit;
    });

    this.ambiguous = file.ambiguous.map((record) => {
      const entry: AmbiguousName = {
        terms: record.terms ?? [],
        names: record.names ?? [],
        choices: record.choices.map((id) => {
          const unit = this.byId.get(id);
          if (!unit) throw new Error(`ambiguous entry: choice ${id} is not a unit`);
          return unit;
        }),
        ...(record.notOffered ? { notOffered: record.notOffered } : {}),
      };
      for (const term of entry.terms) {
        if (this.byKey.has(unitKey(term))) throw new Error(`ambiguous term "${term}" is also a unit symbol`);
        claim(this.ambiguousByKey, unitKey(term), entry, "ambiguous term");
      }
      for (const name of entry.names) {
        if (this.byName.has(nameKey(name))) throw new Error(`ambiguous name "${name}" is also a unit name`);
        if (this.byKey.has(unitKey(name))) throw new Error(`ambiguous name "${name}" is also a unit symbol`);
        claim(this.ambiguousByName, nameKey(name), entry, "ambiguous name");
      }
      return entry;
    });

    for (const unit of this.units) {
      for (const text of [unit.id, unit.symbol, ...unit.aliases, ...unit.names]) {
        this.spellings.push({ key: nameKey(text), units: [unit] });
      }
    }
    for (const entry of this.ambiguous) {
      for (const text of [...entry.terms, ...entry.names])
        this.spellings.push({ key: nameKey(text), units: entry.choices });
    }
  }

  get(id: string): Unit | undefined {
    return this.byId.get(id);
  }

  /**
   * A unit as an agent wrote it. In order: the id, symbol or an alias (case-sensitive, after
   * unitKey); a term known to be ambiguous; a spelled-out name (case-insensitive); an ambiguous
   * name. Anything else is unknown, with up to five close matches.
   */
  resolve(text: string): Resolution {
    const key = unitKey(text);
    const unit = this.byKey.get(key);
    if (unit) return { kind: "unit", unit };
    const ambiguousTerm = this.ambiguousByKey.get(key);
    if (ambiguousTerm) return { kind: "ambiguous", text, entry: ambiguousTerm };
    const name = nameKey(text);
    const named = this.byName.get(name);
    if (named) return { kind: "unit", unit: named };
    const ambiguousName = this.ambiguousByName.get(name);
    if (ambiguousName) return { kind: "ambiguous", text, entry: ambiguousName };
    // Close matches cost an edit distance per spelling: computed only when a message asks for them.
    const table = this;
    let suggestions: readonly Unit[] | undefined;
    return {
      kind: "unknown",
      text,
      get suggestions() {
        suggestions ??= table.closeMatches(name);
        return suggestions;
      },
    };
  }

  /** Units whose spellings are within a small edit distance of the key (case and separators ignored). */
  closeMatches(key: string, limit = 5): Unit[] {
    const maxDistance = key.length <= 1 ? 0 : key.length <= 3 ? 1 : key.length <= 6 ? 2 : 3;
    const best = new Map<Unit, number>();
    for (const spelling of this.spellings) {
      if (Math.abs(spelling.key.length - key.length) > maxDistance) continue;
      const distance = editDistance(key, spelling.key, maxDistance);
      if (distance > maxDistance) continue;
      for (const unit of spelling.units) {
        if (distance < (best.get(unit) ?? Number.POSITIVE_INFINITY)) best.set(unit, distance);
      }
    }
    const order = new Map(this.units.map((unit, index) => [unit, index]));
    return [...best]
      .sort(([a, da], [b, db]) => da - db || (order.get(a) ?? 0) - (order.get(b) ?? 0))
      .slice(0, limit)
      .map(([unit]) => unit);
  }
}

/** Optimal-string-alignment distance (adjacent transpositions count 1), cut off above `max`. */
export function editDistance(a: string, b: string, max: number): number {
  const [s, t] = [[...a], [...b]];
  let previous2: number[] = [];
  let previous = Array.from({ length: t.length + 1 }, (_, j) => j);
  for (let i = 1; i <= s.length; i++) {
    const current = [i];
    let rowMin = i;
    for (let j = 1; j <= t.length; j++) {
      const cost = s[i - 1] === t[j - 1] ? 0 : 1;
      let value = Math.min(
        (previous[j] as number) + 1,
        (current[j - 1] as number) + 1,
        (previous[j - 1] as number) + cost,
      );
      if (i > 1 && j > 1 && s[i - 1] === t[j - 2] && s[i - 2] === t[j - 1]) {
        value = Math.min(value, (previous2[j - 2] as number) + 1);
      }
      current.push(value);
      rowMin = Math.min(rowMin, value);
    }
    if (rowMin > max) return max + 1;
    previous2 = previous;
    previous = current;
  }
  return previous[t.length] as number;
}

export function loadUnitTable(url: URL = UNIT_TABLE_URL): UnitTable {
  const parsed = TableFile.safeParse(JSON.parse(fs.readFileSync(url, "utf8")));
  if (!parsed.success)
    throw new Error(`unit table ${url.pathname} is invalid: ${z.prettifyError(parsed.error)}`);
  return new UnitTable(parsed.data);
}

/** The service's table, read once when the operation is loaded. */
export const UNITS = loadUnitTable();
