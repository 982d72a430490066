import path from "node:path";
import { z } from "zod";
import { envSettings, httpUrl, optional } from "../../env-settings.ts";

export interface ClinicalTrialsSettings {
  /** The clinical index the ingest builds (its snapshot is a product when it is a full ingest). */
  dbPath: string;
  /** The registry the ingest reads (ClinicalTrials.gov API v2). */
  apiUrl: string;
}

export const clinicalTrialsSettings = envSettings({
  variables: {
    CLINICAL_TRIALS_DB: optional(z.string()),
    CLINICAL_TRIALS_API_URL: optional(httpUrl).default("https://clinicaltrials.gov/api/v2/studies"),
  },
  read: (e, { dataDir }): ClinicalTrialsSettings => ({
    dbPath: path.resolve(e.CLINICAL_TRIALS_DB ?? path.join(dataDir, "clinical-trials.sqlite")),
    apiUrl: e.CLINICAL_TRIALS_API_URL,
  }),
});
