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

interface Analysis {
  groupIds?: string[];
  groupDescription?: string;
  nonInferiorityType?: string;
  pValue?: string;
  pValueComment?: string;
  statisticalMethod?: string;
  paramType?: string;
  paramValue?: string;
  ciPctValue?: string;
  ciNumSides?: string;
  ciLowerLimit?: string;
  ciUpperLimit?: string;
}

interface OutcomeMeasure {
  type?: string;
  title?: string;
  timeFrame?: string;
  paramType?: string;
  dispersionType?: string;
  unitOfMeasure?: string;
  groups?: OutcomeGroup[];
  classes?: { title?: string; categories?: { title?: string; measurements?: Measurement[] }[] }[];
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
 * p-value ("NA", "see comment") keeps only the raw text. A value outside [0, 1] is not a p-value.
 */
export function parsePValue(raw: string | undefined | null): ParsedPValue {
  if (raw === undefined || raw === null || raw.trim() === "")
    return { comparator: null, value: null, raw: null };
  const match = P_VALUE.exec(raw);
  const value = match ? Number(match[2]) : Number.NaN;
  if (!match || !Number.isFinite(value) || value < 0 || value > 1)
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

export interface PrimaryOutcome {
  title: string | null;
  timeFrame: string | null;
  paramType: string | null;
  dispersionType: string | null;
  unit: string | null;
  groups: { id: string | null; title: string | null }[];
  measurements: {
    groupId: string | null;
    classTitle: string | null;
    categoryTitle: string | null;
    value: string | null;
    spread: string | null;
    lowerLimit: string | null;
    upperLimit: string | null;
    unit: string | null;
  }[];
  analyses: {
    groupIds: string[];
    statisticalMethod: string | null;
    paramType: string | null;
    paramValue: string | null;
    ciPercent: string | null;
    ciLowerLimit: string | null;
    ciUpperLimit: string | null;
    nonInferiorityType: string | null;
    pValue: number | null;
    pValueComparator: ParsedPValue["comparator"];
    pValueRaw: string | null;
  }[];
}

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
  primaryOutcomes: PrimaryOutcome[];
  adverseEvents: { groups: AdverseEventGroup[] } | null;
  sourceUrl: string;
}

const text = (value: string | undefined | null) => (value === undefined || value === null ? null : value);
const num = (value: number | undefined) =>
  typeof value === "number" && Number.isFinite(value) ? value : null;

export const NCT_ID = /^NCT\d{8}$/;

export class StudyRecordError extends Error {}

export function summarizeStudy(study: StudyRecord): TrialSummary {
  const protocol = study.protocolSection ?? {};
  const identification = protocol.identificationModule ?? {};
  const nctId = identification.nctId;
  if (!nctId || !NCT_ID.test(nctId)) {
    throw new StudyRecordError(
      `not a study record: protocolSection.identificationModule.nctId is ${JSON.stringify(nctId)}`,
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
    primaryOutcomes: outcomes.filter((outcome) => outcome.type === "PRIMARY").map(primaryOutcome),
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
  };
}

function primaryOutcome(outcome: OutcomeMeasure): PrimaryOutcome {
  const unit = text(outcome.unitOfMeasure);
  return {
    title: text(outcome.title),
    timeFrame: text(outcome.timeFrame),
    paramType: text(outcome.paramType),
    dispersionType: text(outcome.dispersionType),
    unit,
    groups: (outcome.groups ?? []).map((group) => ({ id: text(group.id), title: text(group.title) })),
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
        })),
      ),
    ),
    analyses: (outcome.analyses ?? []).map((analysis) => {
      const p = parsePValue(analysis.pValue);
      return {
        groupIds: analysis.groupIds ?? [],
        statisticalMethod: text(analysis.statisticalMethod),
        paramType: text(analysis.paramType),
        paramValue: text(analysis.paramValue),
        ciPercent: text(analysis.ciPctValue),
        ciLowerLimit: text(analysis.ciLowerLimit),
        ciUpperLimit: text(analysis.ciUpperLimit),
        nonInferiorityType: text(analysis.nonInferiorityType),
        pValue: p.value,
        pValueComparator: p.comparator,
        pValueRaw: p.raw,
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

/** The words the full-text index holds for a study, by column. */
export function searchText(study: StudyRecord, summary: TrialSummary) {
  const protocol = study.protocolSection ?? {};
  const identification = protocol.identificationModule ?? {};
  const outcomes = study.resultsSection?.outcomeMeasuresModule?.outcomeMeasures ?? [];
  const join = (parts: (string | null | undefined)[]) => parts.filter(Boolean).join("\n");
  return {
    title: join([summary.title, identification.officialTitle, identification.acronym]),
    conditions: join([...summary.conditions, ...(protocol.conditionsModule?.keywords ?? [])]),
    interventions: join(
      (protocol.armsInterventionsModule?.interventions ?? []).flatMap((i) => [
        i.name,
        ...(i.otherNames ?? []),
      ]),
    ),
    sponsor: join([summary.sponsor]),
    outcomes: join(outcomes.map((outcome) => outcome.title)),
  };
}
