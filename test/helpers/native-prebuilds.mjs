// better-sqlite3 binaries this machine has already compiled, kept where prebuild-install looks for a
// package's local prebuilds (its documented `npm_config_better_sqlite3_local_prebuilds`), so that an
// install for a Node.js line compiled once before unpacks that binary instead of compiling sqlite again
// (about ten minutes on a loaded two-core machine). The key is prebuild-install's own file name for the
// binary: the package's version, the Node ABI, the platform, the C library and the architecture; another
// value of any of them finds no file, and the install compiles. prebuild-install loads an unpacked binary
// in the installing Node before it accepts it, and an install script that fails falls back to compiling
// (`prebuild-install || node-gyp rebuild`), so a damaged file costs a compile, not a wrong binary.
//
//   node test/helpers/native-prebuilds.mjs where <node_modules/better-sqlite3>
// prints {"dir", "file", "saved"}: the directory to give prebuild-install, the file it would take for the
// Node.js running this script, and whether that file exists;
//   node test/helpers/native-prebuilds.mjs save <node_modules/better-sqlite3>
// saves the binary compiled there under that name (run it with the Node the binary was built for).
// Plain JavaScript, run as a program: the Node it must run on (the Dockerfile's) has no TypeScript loader.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import { createRequire } from "node:module";
import os from "node:os";
import path from "node:path";

/** The directory of saved binaries: the value of npm_config_better_sqlite3_local_prebuilds. */
const localPrebuildsDir = path.join(os.tmpdir(), "utility402-prebuilds");

const binary = path.join("build", "Release", "better_sqlite3.node");

/** prebuild-install's file name for this package's binary on the Node.js running this script. */
function prebuildFile(packageDir) {
  const require = createRequire(path.join(packageDir, "package.json"));
  const pkg = require("./package.json");
  // The prebuild-install better-sqlite3's install script runs, found from better-sqlite3's directory: its
  // dependency, not this project's, so its naming is the one the install applies.
  const prebuildInstall = (file) => require(`prebuild-install/${file}`);
  const options = prebuildInstall("rc")(pkg);
  const url = prebuildInstall("util").getDownloadUrl({ ...options, pkg });
  return path.join(localPrebuildsDir, path.basename(url));
}

/** Saves the binary compiled in packageDir (better-sqlite3's directory); answers the file it wrote. */
function savePrebuild(packageDir) {
  if (!fs.existsSync(path.join(packageDir, binary))) {
    throw new Error(`${path.join(packageDir, binary)} is missing: nothing compiled to save`);
  }
  const file = prebuildFile(packageDir);
  fs.mkdirSync(localPrebuildsDir, { recursive: true });
  // Written beside its name, then renamed: a concurrent install reads the old file or the new, never half.
  const partial = `${file}.${process.pid}.partial`;
  execFileSync("tar", ["-czf", partial, "-C", packageDir, binary]);
  fs.renameSync(partial, file);
  return file;
}

const [command, packageDir] = process.argv.slice(2);
if (command === "save" && packageDir) {
  console.log(savePrebuild(path.resolve(packageDir)));
} else if (command === "where" && packageDir) {
  const file = prebuildFile(path.resolve(packageDir));
  console.log(JSON.stringify({ dir: localPrebuildsDir, file, saved: fs.existsSync(file) }));
} else {
  console.error("usage: node test/helpers/native-prebuilds.mjs where|save <node_modules/better-sqlite3>");
  process.exit(2);
}
