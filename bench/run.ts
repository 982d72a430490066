/** Runs every bench/*.bench.ts in turn (npm run bench), or the ones named on the command line. */
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

const dir = path.dirname(new URL(import.meta.url).pathname);
const wanted = process.argv.slice(2);
const files = fs
  .readdirSync(dir)
  .filter((file) => file.endsWith(".bench.ts"))
  .filter((file) => wanted.length === 0 || wanted.some((name) => file.startsWith(name)));
for (const file of files) {
  execFileSync(process.execPath, ["--import", "tsx", path.join(dir, file)], { stdio: "inherit" });
}
