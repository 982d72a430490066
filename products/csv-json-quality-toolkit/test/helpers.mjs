import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

export const root = path.resolve(import.meta.dirname, "..");

/** Runs a script of the kit; returns { status, stdout, stderr, json }. */
export function run(script, args, { heapMb } = {}) {
  const node = heapMb ? [`--max-old-space-size=${heapMb}`] : [];
  const result = spawnSync(process.execPath, [...node, path.join(root, script), ...args], { encoding: "utf8", cwd: root });
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

export function tempFile(name, content) {
  const dir = madeTempDir();
  const file = path.join(dir, name);
  if (content !== undefined) fs.writeFileSync(file, content);
  return file;
}

/** The seed of this run's generated cases: CSV_KIT_SEED replays a failure (each test prints it). */
export const SEED = Number(process.env.CSV_KIT_SEED ?? Math.floor(Math.random() * 2 ** 32));

/** mulberry32: a small seeded generator, so a failing case can be replayed from its seed. */
export function random(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
  };
}
