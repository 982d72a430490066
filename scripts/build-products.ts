// npm run build:products [-- slug ...]: builds the product release archives into RELEASES_DIR.
import { ConfigError, loadConfig } from "../src/config.ts";
import { buildProductsCommand } from "../src/products/cli.ts";

try {
  process.exitCode = await buildProductsCommand(loadConfig(), process.argv.slice(2));
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  for (const problem of error.problems) process.stderr.write(`config error: ${problem}\n`);
  process.exitCode = 1;
}
