import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const root = path.resolve(import.meta.dirname, "..");

export function run(script, args) {
  const result = spawnSync(process.execPath, [path.join(root, script), ...args], { encoding: "utf8", cwd: root });
  let json;
  try {
    json = JSON.parse(result.stdout);
  } catch {}
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, json };
}

/** Temporary folders made by these tests, removed when the test process exits. */
const made = [];
process.on("exit", () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});
const madeTempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "kit-test-"));
  made.push(dir);
  return dir;
};

export const tempDir = () => madeTempDir();
