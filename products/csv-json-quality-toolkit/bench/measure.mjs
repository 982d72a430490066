// Runs one of the kit's scripts in this process and reports its peak memory on exit (fd 3 when
// open, else stderr): node bench/measure.mjs <script> [args...]
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const [script, ...args] = process.argv.slice(2);
process.argv = [process.argv[0], path.resolve(script), ...args];
process.on("exit", () => {
  const cpu = process.cpuUsage();
  const line = `${JSON.stringify({ cpuSeconds: Math.round((cpu.user + cpu.system) / 1e4) / 100, maxRssMb: Math.round(process.resourceUsage().maxRSS / 1024), heapUsedMb: Math.round(process.memoryUsage().heapUsed / 2 ** 20) })}\n`;
  try {
    fs.writeSync(3, line);
  } catch {
    process.stderr.write(line);
  }
});
await import(pathToFileURL(path.resolve(script)).href);
