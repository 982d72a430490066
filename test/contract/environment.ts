import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import type { AnyOperation } from "../../src/contract/operation.ts";
import { buildProducts } from "../../src/products/build.ts";
import { products } from "../../src/products/index.ts";
import { fixturePages, startTedStandIn } from "../fixtures/ted/stand-in.ts";
import { QUESTION, researchEnv, startStandIns } from "../operations/research-brief-standins.ts";
import { createClinicalDb } from "../products/helpers.ts";

/** Something running beside the service that an operation reaches, and the settings that point the service at it. */
interface StandIn {
  name: string;
  start(work: string): Promise<{ env: Record<string, string>; stop(): Promise<void> }>;
}

/** The TED Search API answering with a recorded page set, its dates moved to today. */
const TED: StandIn = {
  name: "TED Search API (recorded answers)",
  async start() {
    const pages = fixturePages("search-response-03.json", new Date());
    const ted = await startTedStandIn((request) => ({
      body: pages[(request.page as number) - 1] ?? { ...pages[0], notices: [] },
    }));
    return { env: { TED_API_URL: ted.url }, stop: () => ted.close() };
  },
};

/** A search provider, the pages it points at and a model, all on 127.0.0.1. */
const RESEARCH: StandIn = {
  name: "research search, pages and model",
  async start() {
    const standIns = await startStandIns();
    return { env: researchEnv(standIns), stop: () => standIns.stop() };
  },
};

/** A release of every product, the clinical snapshot's from a database ingested from a registry stand-in. */
const RELEASES: StandIn = {
  name: "product releases",
  async start(work) {
    const releasesDir = path.join(work, "releases");
    const clinicalDb = path.join(work, "clinical.sqlite");
    await createClinicalDb(clinicalDb);
    for (const outcome of await buildProducts({ releasesDir, clinicalDb })) {
      if (outcome.state === "unbuildable") throw new Error(outcome.reason);
    }
    return { env: { RELEASES_DIR: releasesDir, CLINICAL_TRIALS_DB: clinicalDb }, stop: async () => {} };
  },
};

export interface EnvironmentEntry {
  /** What the operation reaches while it serves a call. */
  standIns: readonly StandIn[];
  /**
   * The input to call it with instead of its declared example, when its stand-ins can answer only that
   * (or it declares none).
   */
  input?: Record<string, unknown>;
}

/**
 * What an operation needs beyond its declared example to serve a paid call in the contract suite, by
 * operation id. An operation that needs nothing (its work is local, or local mode gives it what it
 * reaches, as the local chain's DEX) has no entry.
 */
export const ENVIRONMENT: Readonly<Record<string, EnvironmentEntry>> = {
  "tender-shortlist": { standIns: [TED] },
  "tender-shortlist-get": { standIns: [TED] },
  // The stand-in pages are about cold batteries: a brief needs sentences about the question's terms.
  "research-brief": { standIns: [RESEARCH], input: { question: QUESTION, requiredSources: 3 } },
  ...Object.fromEntries(products.map((product) => [product.id, { standIns: [RELEASES] }])),
};

export interface RunningEnvironment {
  /** The service settings every started stand-in asks for. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts, once each, the stand-ins the operations' entries name; stop() stops them and removes their files. */
export async function startEnvironment(operations: readonly AnyOperation[]): Promise<RunningEnvironment> {
  const work = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-contract-"));
  const needed = new Set(operations.flatMap((operation) => ENVIRONMENT[operation.id]?.standIns ?? []));
  const running: Awaited<ReturnType<StandIn["start"]>>[] = [];
  const stop = async () => {
    for (const standIn of running.reverse()) await standIn.stop();
    fs.rmSync(work, { recursive: true, force: true });
  };
  try {
    for (const standIn of needed) {
      running.push(
        await standIn.start(work).catch((error: Error) => {
          throw new Error(`the ${standIn.name} stand-in did not start: ${error.message}`);
        }),
      );
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return { env: Object.assign({}, ...running.map((standIn) => standIn.env)), stop };
}
