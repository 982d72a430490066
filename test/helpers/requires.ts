import fs from "node:fs";
import path from "node:path";

/**
 * Tests that need a real component this repository does not install (a browser, nginx, GNU units,
 * PostgreSQL, root's namespaces, other Node.js lines). Outside CI a missing component skips them, with
 * one line naming what to install, so that `npm test` passes on a fresh clone after `npm ci`. In CI
 * (CI set, as .ci/run does) nothing skips: the tests run, and `check()` fails them naming the install.
 */

/** CI as the usual runners set it (CI=true, CI=1); CI=false or CI=0 does not count. */
export const IN_CI = !["", "0", "false"].includes((process.env.CI ?? "").toLowerCase());

export interface Requirement {
  /** The component, e.g. "chromium". */
  readonly name: string;
  /** Why it is unavailable here, or undefined when it is there. */
  readonly missing: string | undefined;
  /** Skip the tests that need it: it is missing and this is not CI. */
  readonly skip: boolean;
  /** Throws, naming the install, when it is missing (call it first in the tests that need it; in CI it fails them). */
  check(): void;
}

const announced = new Set<string>();

/**
 * A component the tests need, probed once: `probe` answers why it is unavailable (undefined when it is
 * there); `install` is what makes it available (a command or a setting), printed when it is missing.
 */
export function requires(name: string, probe: () => string | undefined, install: string): Requirement {
  const missing = probe();
  const line = `${name}: ${missing}; install: ${install}`;
  const skip = missing !== undefined && !IN_CI;
  if (skip && !announced.has(name)) {
    announced.add(name);
    console.warn(`skipped outside CI (runs in CI) - ${line}`);
  }
  return {
    name,
    missing,
    skip,
    check() {
      if (missing !== undefined) throw new Error(`${line} (.ci/run does; CI may not skip this test)`);
    },
  };
}

/** Whether a program is on the PATH (a bare name) or at that path (an absolute one), executable. */
function executable(program: string): boolean {
  const candidates = path.isAbsolute(program)
    ? [program]
    : (process.env.PATH ?? "").split(path.delimiter).map((dir) => path.join(dir, program));
  return candidates.some((candidate) => {
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return fs.statSync(candidate).isFile();
    } catch {
      return false;
    }
  });
}

/** A program, by path or by name on the PATH, e.g. requireTool("chromium", "/usr/bin/chromium", "apt-get install chromium"). */
export function requireTool(name: string, program: string, install: string): Requirement {
  return requires(
    name,
    () =>
      executable(program)
        ? undefined
        : `${program} is not ${path.isAbsolute(program) ? "installed" : "on the PATH"}`,
    install,
  );
}

/** A setting the tests read from the environment, e.g. TEST_DATABASE_URL. */
export function requireEnv(name: string, variable: string, install: string): Requirement {
  return requires(name, () => (process.env[variable] ? undefined : `${variable} is not set`), install);
}
