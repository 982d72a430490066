/**
 * Synthetic study records for the benchmark (and for tests that need many rows): each is a real
 * record (its results section unchanged, so the counts stay realistic) under a new NCT number
 * from the NCT9… range, which the registry has not reached, with a title, conditions,
 * interventions, sponsor, phase, enrollment and start date drawn from the vocabularies below, so
 * full-text queries meet the spread of words a real index holds. Never loaded into the service.
 */

import type { StudyRecord } from "../../src/operations/clinical-trials-query/summary.ts";
import { seededRandom } from "./random-json.ts";

const CONDITIONS = [
  "Type 2 Diabetes",
  "Type 1 Diabetes",
  "Obesity",
  "Hypertension",
  "Heart Failure",
  "Atrial Fibrillation",
  "Coronary Artery Disease",
  "Chronic Kidney Disease",
  "Asthma",
  "Chronic Obstructive Pulmonary Disease",
  "COVID-19",
  "Influenza",
  "HIV Infections",
  "Hepatitis B",
  "Hepatitis C",
  "Tuberculosis",
  "Malaria",
  "Breast Cancer",
  "Prostate Cancer",
  "Non-small Cell Lung Cancer",
  "Colorectal Cancer",
  "Pancreatic Cancer",
  "Multiple Myeloma",
  "Acute Myeloid Leukemia",
  "Diffuse Large B-Cell Lymphoma",
  "Melanoma",
  "Glioblastoma",
  "Ovarian Cancer",
  "Hepatocellular Carcinoma",
  "Renal Cell Carcinoma",
  "Rheumatoid Arthritis",
  "Psoriasis",
  "Psoriatic Arthritis",
  "Atopic Dermatitis",
  "Ulcerative Colitis",
  "Crohn Disease",
  "Systemic Lupus Erythematosus",
  "Multiple Sclerosis",
  "Alzheimer Disease",
  "Parkinson Disease",
  "Migraine",
  "Epilepsy",
  "Major Depressive Disorder",
  "Schizophrenia",
  "Bipolar Disorder",
  "Generalized Anxiety Disorder",
  "Opioid Use Disorder",
  "Alcohol Use Disorder",
  "Insomnia",
  "Chronic Pain",
  "Osteoarthritis, Knee",
  "Osteoporosis",
  "Sickle Cell Disease",
  "Hemophilia A",
  "Cystic Fibrosis",
  "Spinal Muscular Atrophy",
  "Duchenne Muscular Dystrophy",
  "Macular Degeneration",
  "Diabetic Macular Edema",
  "Glaucoma",
  "Dry Eye Disease",
  "Acne Vulgaris",
  "Rosacea",
  "Hidradenitis Suppurativa",
  "Nonalcoholic Steatohepatitis",
  "Gout",
  "Anemia",
  "Sepsis",
  "Stroke",
  "Dysphagia",
  "Endometriosis",
  "Polycystic Ovary Syndrome",
  "Preterm Birth",
  "Neonatal Jaundice",
  "Smoking Cessation",
  "Axial Spondyloarthritis",
];

const INTERVENTIONS = [
  "Semaglutide",
  "Tirzepatide",
  "Metformin",
  "Empagliflozin",
  "Dapagliflozin",
  "Insulin Glargine",
  "Pembrolizumab",
  "Nivolumab",
  "Atezolizumab",
  "Durvalumab",
  "Osimertinib",
  "Trastuzumab Deruxtecan",
  "Olaparib",
  "Venetoclax",
  "Daratumumab",
  "Lenalidomide",
  "Dupilumab",
  "Upadacitinib",
  "Baricitinib",
  "Tofacitinib",
  "Adalimumab",
  "Secukinumab",
  "Risankizumab",
  "Ustekinumab",
  "Vedolizumab",
  "Ocrelizumab",
  "Lecanemab",
  "Erenumab",
  "Esketamine",
  "Psilocybin",
  "Buprenorphine",
  "Naltrexone",
  "Remdesivir",
  "Nirmatrelvir",
  "mRNA-1273 Vaccine",
  "BNT162b2 Vaccine",
  "Influenza Vaccine",
  "Aflibercept",
  "Faricimab",
  "Ivacaftor",
  "Nusinersen",
  "Cognitive Behavioral Therapy",
  "Aerobic Exercise",
  "Mindfulness Training",
  "Text Message Reminders",
  "Telehealth Visits",
  "Mediterranean Diet",
  "Vitamin D3",
  "Placebo",
  "Standard of Care",
];

const SPONSORS = [
  "Novo Nordisk A/S",
  "Eli Lilly and Company",
  "Pfizer",
  "Merck Sharp & Dohme LLC",
  "AstraZeneca",
  "Hoffmann-La Roche",
  "Novartis Pharmaceuticals",
  "Sanofi",
  "GlaxoSmithKline",
  "Bristol-Myers Squibb",
  "AbbVie",
  "Janssen Research & Development, LLC",
  "Regeneron Pharmaceuticals",
  "Gilead Sciences",
  "Amgen",
  "Takeda",
  "Boehringer Ingelheim",
  "Bayer",
  "Vertex Pharmaceuticals Incorporated",
  "Moderna",
  "National Cancer Institute (NCI)",
  "National Institute of Mental Health (NIMH)",
  "Massachusetts General Hospital",
  "Mayo Clinic",
  "University of California, San Francisco",
  "Johns Hopkins University",
  "Stanford University",
  "University Health Network, Toronto",
  "Washington University School of Medicine",
  "Assistance Publique - Hôpitaux de Paris",
];

const DESIGNS = [
  "A Randomized, Double-Blind, Placebo-Controlled Study of",
  "An Open-Label Extension Study of",
  "A Phase 3 Trial Comparing",
  "Efficacy and Safety of",
  "A Pilot Study of",
  "Long-Term Safety of",
  "A Dose-Ranging Study of",
  "Pharmacokinetics of",
];

const PHASES = [
  ["PHASE1"],
  ["PHASE2"],
  ["PHASE3"],
  ["PHASE2", "PHASE3"],
  ["PHASE4"],
  ["NA"],
  ["EARLY_PHASE1"],
];

/**
 * `count` studies, the same for the same seed. `copiedOn`: the registry copy date every study states
 * (derivedSection.miscInfoModule.versionHolder); without it, the template's.
 */
export function* syntheticStudies(
  templates: StudyRecord[],
  count: number,
  seed = 20260101,
  copiedOn?: string,
): Generator<StudyRecord> {
  const random = seededRandom(seed);
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)] as T;
  for (let i = 0; i < count; i++) {
    const template = templates[i % templates.length] as StudyRecord;
    const protocol = template.protocolSection ?? {};
    const conditions = [...new Set([pick(CONDITIONS), ...(random() < 0.4 ? [pick(CONDITIONS)] : [])])];
    const drug = pick(INTERVENTIONS);
    const comparator = random() < 0.6 ? "Placebo" : pick(INTERVENTIONS);
    const start = new Date(Date.UTC(2020, 0, 1) + Math.floor(random() * 5 * 365) * 86_400_000);
    const completion = new Date(start.getTime() + (180 + Math.floor(random() * 1400)) * 86_400_000);
    // Some dates only name the month, as many registry records do.
    const day = (date: Date) => date.toISOString().slice(0, random() < 0.3 ? 7 : 10);
    yield {
      ...template,
      ...(copiedOn
        ? {
            derivedSection: {
              ...template.derivedSection,
              miscInfoModule: { ...template.derivedSection?.miscInfoModule, versionHolder: copiedOn },
            },
          }
        : {}),
      protocolSection: {
        ...protocol,
        identificationModule: {
          nctId: `NCT9${String(i).padStart(7, "0")}`,
          briefTitle: `${pick(DESIGNS)} ${drug} in ${conditions.join(" and ")}`,
          officialTitle: `${pick(DESIGNS)} ${drug} Versus ${comparator} in Adults With ${conditions[0]}`,
        },
        statusModule: {
          ...protocol.statusModule,
          startDateStruct: { date: day(start), type: "ACTUAL" },
          completionDateStruct: { date: day(completion), type: "ACTUAL" },
        },
        sponsorCollaboratorsModule: { leadSponsor: { name: pick(SPONSORS), class: "OTHER" } },
        conditionsModule: { conditions },
        designModule: {
          ...protocol.designModule,
          phases: pick(PHASES),
          enrollmentInfo: { count: 10 + Math.floor(random() * random() * 3000), type: "ACTUAL" },
        },
        armsInterventionsModule: {
          interventions: [
            { type: "DRUG", name: drug },
            { type: "DRUG", name: comparator },
          ],
        },
      },
    };
  }
}
