/**
 * One ClinicalTrials.gov API v2 study record (protocolSection + resultsSection) → the trial-level
 * results summary the query answers. Field names follow the API's published OpenAPI description;
 * only the fields the summary reads are typed, and every one of them may be missing in a record.
 */

interface DateStruct {
  date?: string;
  type?: string;
}

interface OutcomeGroup {
  id?: string;
  title?: string;
  description?: string;
}

interface Measurement {
  groupId?: string;
  value?: string;
  spread?: string;
  lowerLimit?: string;
  upperLimit?: string;
  comment?: string;
}

/** The number analysed per group (AACT's outcome_counts): `counts[].value` is the registry's text. */
interface Denom {
  units?: string;
  counts?: { groupId?: string; value?: string }[];
}

interface Analysis {
  groupIds?: string[];
  groupDescription?: string;
  nonInferiorityType?: string;
  nonInferiorityComment?: string;
  pValue?: string;
  pValueComment?: string;
  statisticalMethod?: string;
  statisticalComment?: string;
  paramType?: string;
  paramValue?: string;
  dispersionType?: string;
  dispersionValue?: string;
  ciPctValue?: string;
  ciNumSides?: string;
  ciLowerLimit?: string;
  ciUpperLimit?: string;
  estimateComment?: string;
}

interface OutcomeMeasure {
  type?: string;
  title?: string;
  description?: string;
  populationDescription?: string;
  timeFrame?: string;
  paramType?: string;
  dispersionType?: string;
  unitOfMeasure?: string;
  groups?: OutcomeGroup[];
  denoms?: Denom[];
  classes?: {
    title?: string;
    denoms?: Denom[];
    categories?: { title?: string; measurements?: Measurement[] }[];
  }[];
  analyses?: Analysis[];
}

interface EventGroup {
  id?: string;
  title?: string;
  deathsNumAffected?: number;
  deathsNumAtRisk?: number;
  seriousNumAffected?: number;
  seriousNumAtRisk?: number;
  otherNumAffected?: number;
  otherNumAtRisk?: number;
}

/** The parts of an API v2 `Study` the summary reads. */
export interface StudyRecord {
  protocolSection?: {
    identificationModule?: { nctId?: string; briefTitle?: string; officialTitle?: string; acronym?: string };
    statusModule?: {
      startDateStruct?: DateStruct;
      completionDateStruct?: DateStruct;
      primaryCompletionDateStruct?: DateStruct;
      lastUpdatePostDateStruct?: DateStruct;
      lastUpdateSubmitDate?: string;
      resultsFirstPostDateStruct?: DateStruct;
    };
    sponsorCollaboratorsModule?: {
      leadSponsor?: { name?: string; class?: string };
      collaborators?: { name?: string }[];
    };
    conditionsModule?: { conditions?: string[]; keywords?: string[] };
    designModule?: { phases?: string[]; enrollmentInfo?: { count?: number; type?: string } };
    armsInterventionsModule?: { interventions?: { type?: string; name?: string; otherNames?: string[] }[] };
  };
  resultsSection?: {
    outcomeMeasuresModule?: { outcomeMeasures?: OutcomeMeasure[] };
    adverseEventsModule?: { eventGroups?: EventGroup[] };
  };
  /** `versionHolder`: the day of the registry's data the API served this copy from. */
  derivedSection?: { miscInfoModule?: { versionHolder?: string } };
}

export interface ParsedPValue {
  /** The comparator the text states: "<" for "<0.001", "=" for "0.247" or "=0.247". */
  comparator: "<" | "<=" | "=" | ">=" | ">" | null;
  value: number | null;
  raw: string | null;
}

const P_VALUE = /^\s*(?:p\s*)?(<=|>=|≤|≥|<|>|=)?\s*(\d*\.?\d+(?:[eE][-+]?\d+)?)\s*$/i;
const COMPARATORS: Record<string, ParsedPValue["comparator"]> = {
  "<": "<",
  "<=": "<=",
  "≤": "<=",
  ">": ">",
  ">=": ">=",
  "≥": ">=",
  "=": "=",
};

/**
 * "<0.001" → { comparator "<", value 0.001 }; "0.366" and "=0.247" → "="; text that is not a
 * p-value ("NA", "see comment") keeps only the raw text. A value outside [0, 1] is not a p-value,
 * and neither is a reported zero ("0.000", "=0"): a p-value is never 0, so such text is a rounding
 * (p below half the last digit shown) that the registry keeps as typed; it is returned raw only.
 */
export function parsePValue(raw: string | undefined | null): ParsedPValue {
  if (raw === undefined || raw === null || raw.trim() === "")
    return { comparator: null, value: null, raw: null };
  const match = P_VALUE.exec(raw);
  const value = match ? Number(match[2]) : Number.NaN;
  if (!match || !Number.isFinite(value) || value <= 0 || value > 1)
    return { comparator: null, value: null, raw };
  return { comparator: COMPARATORS[match[1] ?? "="] ?? "=", value, raw };
}

/** AACT's way: one endpoint per outcome measure, one measurement per category measurement, one analysis per analysis. */
export interface StudyCounts {
  endpoints: number;
  measurements: number;
  analyses: number;
}

export function countResults(study: StudyRecord): StudyCounts {
  const outcomes = study.resultsSection?.outcomeMeasuresModule?.outcomeMeasures ?? [];
  let measurements = 0;
  let analyses = 0;
  for (const outcome of outcomes) {
    for (const outcomeClass of outcome.classes ?? []) {
      for (const category of outcomeClass.categories ?? [])
        measurements += category.measurements?.length ?? 0;
    }
    analyses += outcome.analyses?.length ?? 0;
  }
  return { endpoints: outcomes.length, measurements, analyses };
}

/** The number analysed in one group, as the registry states it ("26" Participants), and as an integer. */
export interface Denominator {
  groupId: string | null;
  units: string | null;
  value: string | null;
  n: number | null;
}

export interface Outcome {
  type: string | null;
  title: string | null;
  description: string | null;
  populationDescription: string | null;
  timeFrame: string | null;
  paramType: string | null;
  dispersionType: string | null;
  unit: string | null;
  groups: { id: string | null; title: string | null; description: string | null }[];
  /** The number analysed per group (outcome-level `denoms`; AACT's outcome_counts), per unit analysed. */
  denominators: Denominator[];
  measurements: {
    groupId: string | null;
    classTitle: string | null;
    categoryTitle: string | null;
    value: string | null;
    spread: string | null;
    lowerLimit: string | null;
    upperLimit: string | null;
    unit: string | null;
    /** The registry's comment on the value, e.g. why it is "NA". */
    comment: string | null;
    /** The number analysed in this group for this class, where the class states its own. */
    classDenominators: Denominator[];
  }[];
  analyses: {
    groupIds: string[];
    groupDescription: string | null;
    statisticalMethod: string | null;
    statisticalComment: string | null;
    paramType: string | null;
    paramValue: string | null;
    dispersionType: string | null;
    dispersionValue: string | null;
    ciPercent: string | null;
    ciNumSides: string | null;
    ciLowerLimit: string | null;
    ciUpperLimit: string | null;
    estimateComment: string | null;
    nonInferiorityType: string | null;
    nonInferiorityComment: string | null;
    pValue: number | null;
    pValueComparator: ParsedPValue["comparator"];
    pValueRaw: string | null;
    pValueComment: string | null;
  }[];
}

/** Kept under its old name: a primary outcome is an outcome. */
export type PrimaryOutcome = Outcome;

export interface AdverseEventGroup {
  id: string | null;
  title: string | null;
  deathsAffected: number | null;
  deathsAtRisk: number | null;
  seriousAffected: number | null;
  seriousAtRisk: number | null;
  otherAffected: number | null;
  otherAtRisk: number | null;
}

export interface TrialSummary {
  nctId: string;
  title: string;
  officialTitle: string | null;
  conditions: string[];
  interventions: { type: string | null; name: string }[];
  phases: string[];
  enrollment: number | null;
  enrollmentType: string | null;
  sponsor: string | null;
  sponsorClass: string | null;
  /** As the registry states it: a day ("2014-08-05") or only a month ("2015-09"). */
  startDate: string | null;
  completionDate: string | null;
  counts: StudyCounts;
  /** Registry date the results were first posted (YYYY-MM-DD). */
  resultsFirstPosted: string | null;
  primaryOutcomes: Outcome[];
  /** Counted in `counts.endpoints` with the primary ones; the query returns them on request. */
  secondaryOutcomes: Outcome[];
  /** OTHER_PRE_SPECIFIED and POST_HOC outcomes (and any without a type). */
  otherOutcomes: Outcome[];
  adverseEvents: { groups: AdverseEventGroup[] } | null;
  sourceUrl: string;
  recordVersion: RecordVersion;
}

/**
 * Which version of the registry record a summary was built from. The registry keeps every posted
 * version of a record; `lastUpdatePosted` names the one copied, `asOf` the day the copy reflects.
 */
export interface RecordVersion {
  /** derivedSection.miscInfoModule.versionHolder: the record as ClinicalTrials.gov held it on this day. */
  asOf: string | null;
  /** statusModule.lastUpdatePostDateStruct.date: when the registry posted this version of the record. */
  lastUpdatePosted: string | null;
  /** statusModule.lastUpdateSubmitDate: when the sponsor submitted this version. */
  lastUpdateSubmitted: string | null;
}

/** The registry writes these as whole days; anything else is not a version date and is not guessed at. */
const day = (value: string | undefined) =>
  value !== undefined && /^\d{4}-\d{2}-\d{2}$/.test(value) ? value : null;

export function recordVersionOf(study: StudyRecord): RecordVersion {
  const status = study.protocolSection?.statusModule;
  return {
    asOf: day(study.derivedSection?.miscInfoModule?.versionHolder),
    lastUpdatePosted: day(status?.lastUpdatePostDateStruct?.date),
    lastUpdateSubmitted: day(status?.lastUpdateSubmitDate),
  };
}

const text = (value: string | undefined | null) => (value === undefined || value === null ? null : value);
const num = (value: number | undefined) =>
  typeof value === "number" && Number.isFinite(value) ? value : null;

export const NCT_ID = /^NCT\d{8}$/;

/** "nct01234567" → "NCT01234567"; anything that is not an NCT number → null. */
export function normalizeNctId(value: string | undefined | null): string | null {
  if (typeof value !== "string") return null;
  const upper = value.trim().toUpperCase();
  return NCT_ID.test(upper) ? upper : null;
}

export class StudyRecordError extends Error {}

export function summarizeStudy(study: StudyRecord): TrialSummary {
  const protocol = study.protocolSection ?? {};
  const identification = protocol.identificationModule ?? {};
  const nctId = normalizeNctId(identification.nctId);
  if (!nctId) {
    throw new StudyRecordError(
      `not a study record: protocolSection.identificationModule.nctId is ${JSON.stringify(identification.nctId)}`,
    );
  }
  const status = protocol.statusModule ?? {};
  const sponsor = protocol.sponsorCollaboratorsModule?.leadSponsor;
  const design = protocol.designModule ?? {};
  const outcomes = study.resultsSection?.outcomeMeasuresModule?.outcomeMeasures ?? [];
  const eventGroups = study.resultsSection?.adverseEventsModule?.eventGroups;
  return {
    nctId,
    title: identification.briefTitle ?? identification.officialTitle ?? nctId,
    officialTitle: text(identification.officialTitle),
    conditions: protocol.conditionsModule?.conditions ?? [],
    interventions: (protocol.armsInterventionsModule?.interventions ?? [])
      .filter((intervention) => intervention.name)
      .map((intervention) => ({ type: text(intervention.type), name: intervention.name as string })),
    phases: design.phases ?? [],
    enrollment: num(design.enrollmentInfo?.count),
    enrollmentType: text(design.enrollmentInfo?.type),
    sponsor: text(sponsor?.name),
    sponsorClass: text(sponsor?.class),
    startDate: text(status.startDateStruct?.date),
    completionDate: text(status.completionDateStruct?.date),
    counts: countResults(study),
    resultsFirstPosted: sortableDate(text(status.resultsFirstPostDateStruct?.date)),
    primaryOutcomes: outcomes.filter((outcome) => outcome.type === "PRIMARY").map(summarizeOutcome),
    secondaryOutcomes: outcomes.filter((outcome) => outcome.type === "SECONDARY").map(summarizeOutcome),
    otherOutcomes: outcomes
      .filter((outcome) => outcome.type !== "PRIMARY" && outcome.type !== "SECONDARY")
      .map(summarizeOutcome),
    adverseEvents: eventGroups
      ? {
          groups: eventGroups.map((group) => ({
            id: text(group.id),
            title: text(group.title),
            deathsAffected: num(group.deathsNumAffected),
            deathsAtRisk: num(group.deathsNumAtRisk),
            seriousAffected: num(group.seriousNumAffected),
            seriousAtRisk: num(group.seriousNumAtRisk),
            otherAffected: num(group.otherNumAffected),
            otherAtRisk: num(group.otherNumAtRisk),
          })),
        }
      : null,
    sourceUrl: `https://clinicaltrials.gov/study/${nctId}`,
    recordVersion: recordVersionOf(study),
  };
}

/** "26" → 26; a count the registry wrote otherwise ("26.5", "NA") → null, its text kept in `value`. */
const denominatorCount = (value: string | null) =>
  value !== null && /^\d+$/.test(value) ? Number(value) : null;

function denominators(denoms: Denom[] | undefined, groupId?: string | null): Denominator[] {
  return (denoms ?? []).flatMap((denom) =>
    (denom.counts ?? [])
      .filter((count) => groupId === undefined || text(count.groupId) === groupId)
      .map((count) => ({
        groupId: text(count.groupId),
        units: text(denom.units),
        value: text(count.value),
        n: denominatorCount(text(count.value)),
      })),
  );
}

function summarizeOutcome(outcome: OutcomeMeasure): Outcome {
  const unit = text(outcome.unitOfMeasure);
  return {
    type: text(outcome.type),
    title: text(outcome.title),
    description: text(outcome.description),
    populationDescription: text(outcome.populationDescription),
    timeFrame: text(outcome.timeFrame),
    paramType: text(outcome.paramType),
    dispersionType: text(outcome.dispersionType),
    unit,
    groups: (outcome.groups ?? []).map((group) => ({
      id: text(group.id),
      title: text(group.title),
      description: text(group.description),
    })),
    denominators: denominators(outcome.denoms),
    measurements: (outcome.classes ?? []).flatMap((outcomeClass) =>
      (outcomeClass.categories ?? []).flatMap((category) =>
        (category.measurements ?? []).map((measurement) => ({
          groupId: text(measurement.groupId),
          classTitle: text(outcomeClass.title),
          categoryTitle: text(category.title),
          value: text(measurement.value),
          spread: text(measurement.spread),
          lowerLimit: text(measurement.lowerLimit),
          upperLimit: text(measurement.upperLimit),
          unit,
          comment: text(measurement.comment),
          classDenominators: denominators(outcomeClass.denoms, text(measurement.groupId)),
        })),
      ),
    ),
    analyses: (outcome.analyses ?? []).map((analysis) => {
      const p = parsePValue(analysis.pValue);
      return {
        groupIds: analysis.groupIds ?? [],
        groupDescription: text(analysis.groupDescription),
        statisticalMethod: text(analysis.statisticalMethod),
        statisticalComment: text(analysis.statisticalComment),
        paramType: text(analysis.paramType),
        paramValue: text(analysis.paramValue),
        dispersionType: text(analysis.dispersionType),
        dispersionValue: text(analysis.dispersionValue),
        ciPercent: text(analysis.ciPctValue),
        ciNumSides: text(analysis.ciNumSides),
        ciLowerLimit: text(analysis.ciLowerLimit),
        ciUpperLimit: text(analysis.ciUpperLimit),
        estimateComment: text(analysis.estimateComment),
        nonInferiorityType: text(analysis.nonInferiorityType),
        nonInferiorityComment: text(analysis.nonInferiorityComment),
        pValue: p.value,
        pValueComparator: p.comparator,
        pValueRaw: p.raw,
        pValueComment: text(analysis.pValueComment),
      };
    }),
  };
}

/**
 * A registry date as a sortable day: "2015-09" → "2015-09-01", "2015" → "2015-01-01" (a partial
 * date compares as the first day of its period); anything else → null.
 */
export function sortableDate(date: string | null): string | null {
  if (!date) return null;
  const match = /^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$/.exec(date);
  if (!match) return null;
  return `${match[1]}-${match[2] ?? "01"}-${match[3] ?? "01"}`;
}

/**
 * Between the items of a multi-valued field in the full-text index (conditions, interventions), so
 * that a phrase cannot run from one item into the next ("diabetes obesity" over the conditions
 * "Type 2 Diabetes" and "Obesity"). U+241E is a token character of the index's tokenizer (see
 * database.ts) that no search can contain: searches are split into letters and digits.
 */
export const ITEM_SEPARATOR = "\n\u241e\n";

/** The words the full-text index holds for a study, by column. */
export function searchText(study: StudyRecord, summary: TrialSummary) {
  const protocol = study.protocolSection ?? {};
  const identification = protocol.identificationModule ?? {};
  const outcomes = study.resultsSection?.outcomeMeasuresModule?.outcomeMeasures ?? [];
  const join = (parts: (string | null | undefined)[]) => parts.filter(Boolean).join("\n");
  const items = (parts: (string | null | undefined)[]) => parts.filter(Boolean).join(ITEM_SEPARATOR);
  return {
    title: join([summary.title, identification.officialTitle, identification.acronym]),
    conditions: items([...summary.conditions, ...(protocol.conditionsModule?.keywords ?? [])]),
    interventions: items(
      (protocol.armsInterventionsModule?.interventions ?? []).flatMap((i) => [
        i.name,
        ...(i.otherNames ?? []),
      ]),
    ),
    sponsor: join([summary.sponsor]),
    outcomes: join(outcomes.map((outcome) => outcome.title)),
  };
}
