import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { SAMPLE_DIR } from "./sample.ts";
import { parsePValue, type StudyRecord, StudyRecordError, sortableDate, summarizeStudy } from "./summary.ts";

const record = (nctId: string) =>
  JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, `${nctId}.json`), "utf8")) as StudyRecord;

describe("parsePValue", () => {
  it.each([
    ["<0.001", "<", 0.001],
    ["< 0.0001", "<", 0.0001],
    ["0.366", "=", 0.366],
    ["=0.247", "=", 0.247],
    ["<=0.05", "<=", 0.05],
    ["≤0.05", "<=", 0.05],
    [">0.99", ">", 0.99],
    ["p<0.01", "<", 0.01],
    ["1.0", "=", 1],
    [".04", "=", 0.04],
    ["1e-5", "=", 0.00001],
  ])("%s → %s %d, raw text kept", (raw, comparator, value) => {
    expect(parsePValue(raw)).toEqual({ comparator, value, raw });
  });

  it.each(["NA", "see comment", "1.5", "-0.2", "0.01 (one-sided)", "0.000", "=0", "<0"])(
    "%s is not a p-value: only the raw text",
    (raw) => {
      expect(parsePValue(raw)).toEqual({ comparator: null, value: null, raw });
    },
  );

  it("no p-value at all is three nulls", () => {
    expect(parsePValue(undefined)).toEqual({ comparator: null, value: null, raw: null });
    expect(parsePValue(" ")).toEqual({ comparator: null, value: null, raw: null });
  });
});

describe("summarizeStudy on real records", () => {
  it("NCT02552212: protocol fields, AACT counts, the primary outcomes with parsed p-values", () => {
    const summary = summarizeStudy(record("NCT02552212"));
    expect(summary).toMatchObject({
      nctId: "NCT02552212",
      title:
        "Multicenter Study Evaluating Certolizumab Pegol Compared to Placebo in Subjects With axSpA Without X-ray Evidence of AS",
      conditions: ["Axial Spondyloarthritis", "Nonradiographic Axial Spondyloarthritis", "Nr-axSpA"],
      interventions: [
        { type: "BIOLOGICAL", name: "Certolizumab Pegol" },
        { type: "OTHER", name: "Placebo" },
      ],
      phases: ["PHASE3"],
      enrollment: 317,
      enrollmentType: "ACTUAL",
      sponsor: "UCB BIOSCIENCES GmbH",
      sponsorClass: "INDUSTRY",
      startDate: "2015-09",
      completionDate: "2020-05",
      counts: { endpoints: 31, measurements: 66, analyses: 12 },
      sourceUrl: "https://clinicaltrials.gov/study/NCT02552212",
    });
    const first = summary.primaryOutcomes[0];
    expect(first).toMatchObject({
      title:
        "Percentage of Subjects With Ankylosing Spondylitis Disease Activity Score Major Improvement (ASDAS-MI) Response Criteria Response at Week 52",
      timeFrame: "Week 52",
      unit: "percentage of subjects",
      groups: [
        { id: "OG000", title: "Placebo (FAS)" },
        { id: "OG001", title: "CZP 200 mg Q2W (FAS)" },
      ],
    });
    expect(first?.measurements.map((m) => [m.groupId, m.value, m.unit])).toEqual([
      ["OG000", "7.0", "percentage of subjects"],
      ["OG001", "47.2", "percentage of subjects"],
    ]);
    expect(first?.analyses).toEqual([
      expect.objectContaining({
        groupIds: ["OG000", "OG001"],
        statisticalMethod: "Regression, Logistic",
        paramType: "Odds Ratio (OR)",
        paramValue: "15.231",
        ciLowerLimit: "7.336",
        ciUpperLimit: "31.623",
        pValue: 0.001,
        pValueComparator: "<",
        pValueRaw: "<0.001",
      }),
    ]);
  });

  it("every primary outcome of every sample record is kept, and only those", () => {
    for (const file of fs.readdirSync(SAMPLE_DIR).filter((name) => name.endsWith(".json"))) {
      const study = JSON.parse(fs.readFileSync(path.join(SAMPLE_DIR, file), "utf8")) as StudyRecord;
      const primaries = (study.resultsSection?.outcomeMeasuresModule?.outcomeMeasures ?? []).filter(
        (outcome) => outcome.type === "PRIMARY",
      );
      const summary = summarizeStudy(study);
      expect(summary.primaryOutcomes.map((outcome) => outcome.title)).toEqual(primaries.map((o) => o.title));
      expect(summary.primaryOutcomes.length).toBeGreaterThan(0);
    }
  });

  it("NCT03064438: adverse-event totals per group, a plain p-value", () => {
    const summary = summarizeStudy(record("NCT03064438"));
    expect(summary.adverseEvents).toEqual({
      groups: [
        {
          id: "EG000",
          title: "ACU-D1 Ointment",
          deathsAffected: 0,
          deathsAtRisk: 27,
          seriousAffected: 0,
          seriousAtRisk: 27,
          otherAffected: 11,
          otherAtRisk: 27,
        },
        {
          id: "EG001",
          title: "ACU-D1 Ointment Vehicle",
          deathsAffected: 0,
          deathsAtRisk: 13,
          seriousAffected: 0,
          seriousAtRisk: 13,
          otherAffected: 4,
          otherAtRisk: 13,
        },
      ],
    });
    expect(summary.primaryOutcomes[0]?.analyses[0]).toMatchObject({
      pValue: 0.366,
      pValueComparator: "=",
      pValueRaw: "0.366",
    });
    expect(summary.primaryOutcomes[0]?.unit).toBe("number of lesions");
  });

  it("a record without phases or results sections still summarizes; one without an NCT number is refused", () => {
    const summary = summarizeStudy({ protocolSection: { identificationModule: { nctId: "NCT00000001" } } });
    expect(summary).toMatchObject({
      title: "NCT00000001",
      phases: [],
      enrollment: null,
      counts: { endpoints: 0, measurements: 0, analyses: 0 },
      primaryOutcomes: [],
      adverseEvents: null,
    });
    expect(() => summarizeStudy({ protocolSection: {} })).toThrow(StudyRecordError);
  });
});

describe("what the summary keeps beside the values (issue 23)", () => {
  it("N per group: NCT02210780's primary outcome gives 92 and 90 Participants analysed, beside 83.7 % and 83.3 %", () => {
    const outcome = summarizeStudy(record("NCT02210780")).primaryOutcomes[0];
    expect(outcome?.denominators).toEqual([
      { groupId: "OG000", units: "Participants", value: "92", n: 92 },
      { groupId: "OG001", units: "Participants", value: "90", n: 90 },
    ]);
    expect(outcome?.measurements.map((m) => [m.groupId, m.value])).toEqual([
      ["OG000", "83.7"],
      ["OG001", "83.3"],
    ]);
  });

  it("NCT03064438: the analysis of the primary outcome, every field the registry states", () => {
    const summary = summarizeStudy(record("NCT03064438"));
    const outcome = summary.primaryOutcomes[0];
    expect(outcome?.denominators.map((d) => [d.groupId, d.n])).toEqual([
      ["OG000", 26],
      ["OG001", 11],
    ]);
    expect(outcome?.groups[0]).toEqual({
      id: "OG000",
      title: "ACU-D1 Ointment",
      description: "Twice-daily application of ACU-D1 ointment to the face for 12 weeks.",
    });
    expect(outcome?.analyses).toEqual([
      {
        groupIds: ["OG000", "OG001"],
        groupDescription: null,
        statisticalMethod: "t-test, 2 sided",
        statisticalComment: null,
        paramType: "Difference of Least Squares (LS) Mean",
        paramValue: "1.8",
        dispersionType: "STANDARD_ERROR_OF_MEAN",
        dispersionValue: "1.95",
        ciPercent: "95",
        ciNumSides: "TWO_SIDED",
        ciLowerLimit: "-2.162",
        ciUpperLimit: "5.727",
        estimateComment: null,
        nonInferiorityType: "SUPERIORITY",
        nonInferiorityComment: null,
        pValue: 0.366,
        pValueComparator: "=",
        pValueRaw: "0.366",
        pValueComment: null,
      },
    ]);
  });

  it("the secondary and other outcomes are kept, with their per-class N where the class states one", () => {
    const raw = record("NCT03064438");
    const summary = summarizeStudy(raw);
    expect(summary.secondaryOutcomes).toHaveLength(7);
    expect(summary.otherOutcomes.map((o) => o.type)).toEqual(["OTHER_PRE_SPECIFIED", "OTHER_PRE_SPECIFIED"]);
    expect(
      summary.primaryOutcomes.length + summary.secondaryOutcomes.length + summary.otherOutcomes.length,
    ).toBe(summary.counts.endpoints);
    const glossary = summary.secondaryOutcomes[0];
    expect(glossary?.measurements.filter((m) => m.classTitle === "Week 2")).toMatchObject([
      {
        groupId: "OG000",
        value: "-23",
        classDenominators: [{ groupId: "OG000", units: "Participants", n: 27 }],
      },
      {
        groupId: "OG001",
        value: "-29",
        classDenominators: [{ groupId: "OG001", units: "Participants", n: 13 }],
      },
    ]);
    expect(
      glossary?.measurements.filter((m) => m.classTitle === "Week 12").map((m) => m.classDenominators[0]?.n),
    ).toEqual([26, 11]);
    // The analyses of every outcome keep their dispersion: 21 of the sample's 41 analyses state one.
    const all = (id: string) => {
      const s = summarizeStudy(record(id));
      return [...s.primaryOutcomes, ...s.secondaryOutcomes, ...s.otherOutcomes].flatMap((o) => o.analyses);
    };
    const analyses = ["NCT00763412", "NCT02210780", "NCT02552212", "NCT03064438", "NCT05594173"].flatMap(all);
    expect(analyses).toHaveLength(41);
    expect(analyses.filter((a) => a.dispersionType !== null && a.dispersionValue !== null)).toHaveLength(21);
    expect(analyses.filter((a) => a.ciNumSides !== null)).toHaveLength(36);
  });

  it('NCT02552212: an "NA" value keeps the registry\'s comment', () => {
    const summary = summarizeStudy(record("NCT02552212"));
    const na = summary.primaryOutcomes.flatMap((o) => o.measurements).filter((m) => m.value === "NA");
    expect(na.length).toBeGreaterThan(0);
    expect(na[0]?.comment).toBe("Values were below the level of quantification.");
  });

  it('a p-value reported as "0.000" is kept as text, not read as p = 0', () => {
    const raw = record("NCT03064438");
    const copy = structuredClone(raw);
    const analysis = copy.resultsSection?.outcomeMeasuresModule?.outcomeMeasures?.[0]?.analyses?.[0];
    if (analysis) analysis.pValue = "0.000";
    expect(summarizeStudy(copy).primaryOutcomes[0]?.analyses[0]).toMatchObject({
      pValue: null,
      pValueComparator: null,
      pValueRaw: "0.000",
    });
  });

  it("an NCT number in lower case is read as the registry writes it", () => {
    expect(
      summarizeStudy({ protocolSection: { identificationModule: { nctId: "nct01234567" } } }).nctId,
    ).toBe("NCT01234567");
  });
});

describe("sortableDate", () => {
  it("reads a month-only date as its first day", () => {
    expect(sortableDate("2015-09")).toBe("2015-09-01");
    expect(sortableDate("2014-08-05")).toBe("2014-08-05");
    expect(sortableDate("2019")).toBe("2019-01-01");
    expect(sortableDate("September 2015")).toBeNull();
    expect(sortableDate(null)).toBeNull();
  });
});
