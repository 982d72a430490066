import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

/** The bundle's root (this file is automation/test/helpers.mjs). */
export const bundle = path.resolve(import.meta.dirname, "../..");
const made = [];
process.on("exit", () => {
  for (const dir of made) fs.rmSync(dir, { recursive: true, force: true });
});
/** A fresh folder under the OS temp dir, removed when the test process exits. */
export const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "bundle-test-"));
  made.push(dir);
  return dir;
};

export function node(script, args, { cwd = bundle, env = {} } = {}) {
  const result = spawnSync(process.execPath, [path.resolve(bundle, script), ...args], { cwd, encoding: "utf8", env: { PATH: process.env.PATH, HOME: process.env.HOME, ...env } });
  let json;
  try {
    json = JSON.parse(result.stdout);
  } catch {}
  return { status: result.status, stdout: result.stdout, stderr: result.stderr, json };
}
