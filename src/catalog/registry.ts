import type { AnyFreeRoute, AnyOperation } from "../contract/operation.ts";
import type { ServiceOperation } from "../operation-environment.ts";
import { chainArbitrageSnapshot } from "../operations/chain-arbitrage-snapshot/index.ts";
import { clinicalTrialsQuery } from "../operations/clinical-trials-query/index.ts";
import { csvCleanup } from "../operations/csv-cleanup/index.ts";
import { humanoidFmeaQuery } from "../operations/humanoid-fmea-query/index.ts";
import { jsonDiff } from "../operations/json-diff/index.ts";
import { openapiAudit } from "../operations/openapi-audit/index.ts";
import { researchBrief } from "../operations/research-brief/index.ts";
import { tenderShortlist, tenderShortlistGet } from "../operations/tender-shortlist/index.ts";
import { unitConvert, unitListRoute } from "../operations/unit-convert/index.ts";
import { products } from "../products/index.ts";

/**
 * Every paid operation of SPEC.md: the only list of paths and prices in the code base. Typed as operations
 * this service can start: an operation whose `start` wants another environment does not compile.
 */
export const OPERATIONS: readonly ServiceOperation[] = [
  tenderShortlist,
  tenderShortlistGet,
  csvCleanup,
  researchBrief,
  jsonDiff,
  openapiAudit,
  unitConvert,
  humanoidFmeaQuery,
  clinicalTrialsQuery,
  chainArbitrageSnapshot,
  ...products,
];

/** Free GET routes that operations bring along (listed in /openapi.json and /catalog.json, never paid). */
export const FREE_ROUTES: readonly AnyFreeRoute[] = [unitListRoute];

export const JOB_STATUS_PATH = "/v1/jobs/{id}";

export const isImplemented = (operation: AnyOperation) =>
  operation.handler !== undefined || operation.start !== undefined;
