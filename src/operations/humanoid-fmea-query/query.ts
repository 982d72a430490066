import { ACTION_PRIORITIES, type ActionPriority, PRIORITY_RULE } from "./action-priority.ts";
import {
  type CatalogueFile,
  type FmeaEntry,
  type HazardType,
  loadCatalogue,
  type SafetyFunction,
  SUBSYSTEMS,
  type SubsystemId,
} from "./catalogue.ts";
import { Bm25Index, type WeightedField } from "./search.ts";

export interface FmeaQuery {
  text?: string;
  subsystem?: SubsystemId;
  hazardType?: HazardType;
  minSeverity?: number;
  actionPriority?: ActionPriority;
  standard?: string;
  ids?: string[];
  limit: number;
  offset: number;
}

export type FmeaItem = Omit<FmeaEntry, "safetyFunctions"> & {
  rpn: number;
  score?: number;
  priorityRule: typeof PRIORITY_RULE;
  operationalRating: OperationalRating;
  detectionBasis: DetectionBasis;
  safetyFunctions?: SafetyFunction[];
};

/**
 * Which rating governs the risk while the robot works: FMEA-MSR where a run-time monitor and its
 * system response control it (the entry has `msr` and its response limits the harm, M below 10),
 * otherwise the design FMEA. The design-FMEA
 * ratings govern design release either way.
 */
export const OPERATIONAL_RATINGS = ["FMEA-MSR", "DFMEA"] as const;

/**
 * What the residual detection D rests on: since catalogue 2.3.0 the pre-release design verification
 * alone for every entry (`designVerification`), a run-time monitor being rated in `msr.monitoring`.
 */
export const DETECTION_BASES = ["design-verification"] as const;
export type DetectionBasis = (typeof DETECTION_BASES)[number];

/** A monitor governs operation only if its response limits the harm (M below 10). */
export const governedByMonitor = (entry: FmeaEntry) => entry.msr !== undefined && entry.msr.monitoring < 10;
export type OperationalRating = (typeof OPERATIONAL_RATINGS)[number];

export interface FmeaQueryResult {
  catalogueVersion: string;
  count: number;
  total: number;
  items: FmeaItem[];
  facets: { subsystem: Record<string, number>; actionPriority: Record<string, number> };
}

/**
 * Field weights for ranking: what the failure is and what it endangers count most; the long lists
 * of controls and tests count once. Every field of an entry is searchable.
 */
function searchableFields(entry: FmeaEntry, functions: ReadonlyMap<string, SafetyFunction>): WeightedField[] {
  const subsystem = SUBSYSTEMS.find((s) => s.id === entry.subsystem);
  return [
    { text: entry.id, weight: 3 },
    { text: entry.failureMode, weight: 3 },
    { text: `${entry.subsystem} ${subsystem?.name ?? ""}`, weight: 2 },
    { text: entry.function, weight: 2 },
    { text: `${entry.hazard.type} ${entry.hazard.description}`, weight: 2 },
    { text: entry.effects.join(" "), weight: 1 },
    { text: entry.causes.join(" "), weight: 1 },
    { text: entry.preventionControls.join(" "), weight: 1 },
    { text: entry.detectionControls.join(" "), weight: 1 },
    {
      // The effect after a response is a harm still to find only where the response comes too late
      // (M 10); elsewhere it mostly names harms averted ("does not fall"), which would match searches
      // for those harms.
      text: entry.msr
        ? `${entry.msr.systemResponse} ${entry.msr.monitoring === 10 ? entry.msr.effectAfterResponse : ""}`
        : "",
      weight: 1,
    },
    { text: `${entry.verificationTest.method} ${entry.verificationTest.acceptanceCriteria}`, weight: 1 },
    { text: entry.references.map((r) => `${r.standard} ${r.topic} ${r.status ?? ""}`).join(" "), weight: 1 },
    { text: (entry.furtherActions ?? []).join(" "), weight: 1 },
    {
      text: (entry.safetyFunctions ?? []).map((id) => `${id} ${functions.get(id)?.name ?? ""}`).join(" "),
      weight: 1,
    },
    { text: `${entry.hazard.harm} ${(entry.supersedes ?? []).join(" ")}`, weight: 1 },
  ];
}

/**
 * Upper case, single spaces, and the document type written one way: "iso/ts  15066", "ISO TS 15066"
 * and "ISO/TS 15066" are the same query, as are "IEC TS 62998-1" and "IEC/TS 62998-1".
 */
const normalizeStandard = (text: string) =>
  text
    .trim()
    .replace(/\s+/g, " ")
    .toUpperCase()
    .replace(/^(ISO\/IEC|ISO|IEC)[ /](TS|TR|PAS) /, "$1 $2 ");

/** A designation and, when it has a document type (TS, TR, PAS), the same without it. */
const variants = (designation: string) => {
  const d = normalizeStandard(designation);
  const bare = d.replace(/^(ISO\/IEC|ISO|IEC) (TS|TR|PAS) /, "$1 ");
  return bare === d ? [d] : [d, bare];
};

/**
 * A standard query matches a cited designation when it names it whole (document type and year
 * included) or a leading part of it that ends at a part or year boundary: "ISO 13849" matches
 * ISO 13849-1:2023 and ISO 13849-2:2012, "13849-1", "TS 15066", "ISO/TS 15066:2016" and
 * "IEC TS 62998-1:2019" match too, "ISO 1384" and "2023" do not, and neither does a year the
 * catalogue does not cite ("ISO 13855:2010").
 */
export function standardMatches(query: string, designation: string): boolean {
  const q = normalizeStandard(query);
  if (!/\d/.test(q)) return false;
  for (const d of variants(designation)) {
    for (let at = d.indexOf(q); at >= 0; at = d.indexOf(q, at + 1)) {
      const before = at === 0 ? "" : d[at - 1];
      const after = d[at + q.length] ?? "";
      if (
        (before === "" || before === " " || before === "/") &&
        (after === "" || after === "-" || after === ":")
      ) {
        return true;
      }
    }
  }
  return false;
}

export class FmeaCatalogue {
  readonly entries: readonly FmeaEntry[];
  readonly version: string;
  /** Every standard designation the catalogue cites, sorted. */
  readonly standards: readonly string[];
  readonly ids: ReadonlySet<string>;
  /** Ids retired by merges, each to the entry that now holds it. */
  readonly retired: ReadonlyMap<string, string>;
  readonly safetyFunctions: ReadonlyMap<string, SafetyFunction>;
  readonly file: CatalogueFile;
  readonly #index: Bm25Index<FmeaEntry>;

  constructor(file: CatalogueFile) {
    this.file = file;
    this.entries = file.entries;
    this.version = file.version;
    this.retired = new Map(file.retired.map((r) => [r.id, r.mergedInto]));
    this.safetyFunctions = new Map(file.safetyFunctions.map((sf) => [sf.id, sf]));
    this.standards = [...new Set(file.entries.flatMap((e) => e.references.map((r) => r.standard)))].sort();
    this.ids = new Set(file.entries.map((e) => e.id));
    this.#index = new Bm25Index(file.entries, (entry) => searchableFields(entry, this.safetyFunctions));
  }

  /** Whether any cited standard matches the query (an unknown standard is a 400, not an empty answer). */
  knowsStandard(query: string): boolean {
    return this.standards.some((designation) => standardMatches(query, designation));
  }

  query(query: FmeaQuery): FmeaQueryResult {
    const wanted = query.ids ? new Set(query.ids.map((id) => this.retired.get(id) ?? id)) : undefined;
    const include = (entry: FmeaEntry) =>
      (query.subsystem === undefined || entry.subsystem === query.subsystem) &&
      (query.hazardType === undefined || entry.hazard.type === query.hazardType) &&
      (query.minSeverity === undefined || entry.severity >= query.minSeverity) &&
      (query.actionPriority === undefined || entry.actionPriority === query.actionPriority) &&
      (query.standard === undefined ||
        entry.references.some((r) => standardMatches(query.standard as string, r.standard))) &&
      (wanted === undefined || wanted.has(entry.id));

    const matches: { doc: FmeaEntry; score?: number }[] =
      query.text === undefined
        ? this.entries.filter(include).map((doc) => ({ doc }))
        : this.#index.search(query.text, include);

    const facets = {
      subsystem: Object.fromEntries(SUBSYSTEMS.map((s) => [s.id, 0])) as Record<string, number>,
      actionPriority: Object.fromEntries(ACTION_PRIORITIES.map((ap) => [ap, 0])) as Record<string, number>,
    };
    for (const { doc } of matches) {
      facets.subsystem[doc.subsystem] = (facets.subsystem[doc.subsystem] ?? 0) + 1;
      facets.actionPriority[doc.actionPriority] = (facets.actionPriority[doc.actionPriority] ?? 0) + 1;
    }

    const items = matches.slice(query.offset, query.offset + query.limit).map(({ doc, score }) => {
      const { safetyFunctions, ...entry } = doc;
      const item: FmeaItem = {
        ...entry,
        priorityRule: PRIORITY_RULE,
        operationalRating: governedByMonitor(doc) ? "FMEA-MSR" : "DFMEA",
        detectionBasis: "design-verification",
        rpn: doc.severity * doc.occurrence * doc.detection,
        ...(score === undefined ? {} : { score }),
      };
      if (safetyFunctions) {
        item.safetyFunctions = safetyFunctions.map((id) => this.safetyFunctions.get(id) as SafetyFunction);
      }
      return item;
    });
    return { catalogueVersion: this.version, count: items.length, total: matches.length, items, facets };
  }
}

/** The catalogue the service ships, read and checked once when this module loads. */
export const CATALOGUE = new FmeaCatalogue(loadCatalogue());
