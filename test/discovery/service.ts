import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { buildProducts, REPOSITORY_PRODUCTS } from "../../src/products/build.ts";
import { startTestService, type TestService } from "../helpers/service.ts";

/**
 * The service as an indexer meets it: every operation that can answer its 402 here does. research-brief
 * answers 503 before its 402 while its search provider cannot be reached, so it gets one that listens
 * (and is never asked anything: nothing is paid for it); a product answers 503 while it has no release,
 * so the four repository products are built (the clinical snapshot needs a full ingest and stays a 503).
 */
export async function startDiscoveryService(): Promise<TestService> {
  const searchStandIn = net.createServer((socket) => socket.end());
  await new Promise<void>((resolve) => searchStandIn.listen(0, "127.0.0.1", resolve));
  const releasesDir = fs.mkdtempSync(path.join(os.tmpdir(), "utility402-discovery-releases-"));
  const cleanUp = () => {
    fs.rmSync(releasesDir, { recursive: true, force: true });
    searchStandIn.close();
  };
  try {
    await buildProducts(
      { releasesDir, clinicalDb: path.join(releasesDir, "none.sqlite") },
      REPOSITORY_PRODUCTS,
    );
    const service = await startTestService({
      RELEASES_DIR: releasesDir,
      RESEARCH_SEARCH_PROVIDER: "searxng",
      RESEARCH_SEARCH_URL: `http://127.0.0.1:${(searchStandIn.address() as net.AddressInfo).port}`,
    });
    return {
      ...service,
      async stop() {
        await service.stop();
        cleanUp();
      },
    };
  } catch (error) {
    cleanUp();
    throw error;
  }
}
