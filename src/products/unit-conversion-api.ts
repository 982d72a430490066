import fs from "node:fs";
import path from "node:path";
import { build as esbuild } from "esbuild";
import ts from "typescript";
import { inputJsonSchema, outputJsonSchema } from "../contract/json-schema.ts";
import type { AnyOperation } from "../contract/operation.ts";
import { unitConvert, unitListRoute } from "../operations/unit-convert/index.ts";
import { UNIT_TABLE_URL } from "../operations/unit-convert/units.ts";
import type { ArchiveEntry } from "./zip.ts";

/**
 * The engineering-unit-conversion-api product is generated from this project's own unit-convert
 * module, so the standalone service can never drift from the paid operation: the module and what
 * it imports (found by following relative imports) are transpiled from TypeScript to JavaScript
 * with their comments, keeping their paths, and the unit table is copied beside them at the same
 * relative place (`data/units.json`). zod, the one library they use, is bundled once into
 * `vendor/zod.js`, so the service has no runtime dependency. The hand-written parts (server, tests,
 * Dockerfile, README) live in products/engineering-unit-conversion-api/.
 */

const PROJECT_ROOT = path.resolve(import.meta.dirname, "../..");
/** The modules the standalone server imports; everything they import comes along. */
const ROOT_MODULES = [
  "src/operations/unit-convert/index.ts",
  "src/operations/unit-convert/schema.ts",
  "src/problem.ts",
];
const VENDORED = new Map([["zod", "vendor/zod.js"]]);
/** The module specifier of a static import or re-export statement (transpiled output, one per line start). */
const IMPORT = /^((?:import|export)\b[^;"]*?(?:\bfrom\s*|import\s*))"([^"]+)"/gm;

/**
 * The roots and every module they import at run time (type-only imports are gone after
 * transpiling), as generated files keyed by their path in the product.
 */
export function generatedModules(roots: readonly string[] = ROOT_MODULES): Map<string, Buffer> {
  const generated = new Map<string, Buffer>();
  const visit = (module: string) => {
    const jsPath = module.replace(/\.ts$/, ".js");
    if (generated.has(jsPath)) return;
    const { code, imports } = transpile(module);
    generated.set(jsPath, code);
    for (const specifier of imports) {
      if (specifier.startsWith(".")) visit(path.posix.join(path.posix.dirname(module), specifier));
      else if (!specifier.startsWith("node:") && !VENDORED.has(specifier)) {
        throw new Error(`${module} imports ${specifier}: not bundled into the standalone product`);
      }
    }
  };
  roots.forEach(visit);
  return generated;
}

function transpile(module: string): { code: Buffer; imports: string[] } {
  const source = fs.readFileSync(path.join(PROJECT_ROOT, module), "utf8");
  const output = ts.transpileModule(source, {
    fileName: module,
    compilerOptions: {
      module: ts.ModuleKind.ESNext,
      target: ts.ScriptTarget.ES2022,
      verbatimModuleSyntax: false,
      removeComments: false,
    },
  }).outputText;
  const jsPath = module.replace(/\.ts$/, ".js");
  const imports: string[] = [];
  const rewritten = output.replace(IMPORT, (whole, keyword: string, specifier: string) => {
    imports.push(specifier);
    const vendored = VENDORED.get(specifier);
    if (vendored) {
      let relative = path.posix.relative(path.posix.dirname(jsPath), vendored);
      if (!relative.startsWith(".")) relative = `./${relative}`;
      return `${keyword}"${relative}"`;
    }
    return specifier.startsWith(".") ? `${keyword}"${specifier.replace(/\.ts$/, ".js")}"` : whole;
  });
  const header = `// Generated from utility402's ${module} by its product builder; do not edit (the service copy is the source).\n`;
  return { code: Buffer.from(header + rewritten), imports };
}

async function vendorZod(): Promise<ArchiveEntry[]> {
  const result = await esbuild({
    stdin: { contents: 'export { z } from "zod";', resolveDir: PROJECT_ROOT, loader: "js" },
    bundle: true,
    format: "esm",
    platform: "neutral",
    target: "es2022",
    minify: true,
    legalComments: "inline",
    write: false,
    logLevel: "silent",
  });
  const zodPackage = path.join(PROJECT_ROOT, "node_modules/zod");
  const { version } = JSON.parse(fs.readFileSync(path.join(zodPackage, "package.json"), "utf8"));
  const banner = `// zod ${version} (MIT, see vendor/zod.LICENSE), bundled so the service needs no npm install.\n`;
  return [
    { path: "vendor/zod.js", data: Buffer.from(banner + (result.outputFiles[0]?.text ?? "")) },
    { path: "vendor/zod.LICENSE", data: fs.readFileSync(path.join(zodPackage, "LICENSE")) },
  ];
}

const ProblemSchema = {
  type: "object",
  required: ["type", "title", "status", "detail"],
  properties: {
    type: { type: "string", description: "A urn:utility402:problem:* URN." },
    title: { type: "string" },
    status: { type: "integer" },
    detail: { type: "string" },
    instance: { type: "string" },
    errors: {
      type: "array",
      items: {
        type: "object",
        required: ["pointer", "message"],
        properties: {
          pointer: { type: "string", description: "JSON Pointer (RFC 6901) into the request body." },
          message: { type: "string" },
        },
      },
    },
  },
};

const problem = (description: string) => ({
  description,
  content: { "application/problem+json": { schema: { $ref: "#/components/schemas/Problem" } } },
});

/** Words of the seller's paid service that must not reach the buyer's own contract. */
const SELLER_WORDS = /\b(?:charged?|charging|free|pay|paying|paid|payment|price|x402|USDC)\b/i;

/**
 * A description of the paid operation as the buyer's own service says it: the seller's notes on
 * charging go ("never charged", "(free)", "before paying", and any other clause or sentence that
 * speaks of charging or paying, such as how a batch is charged). The build stops if such a word is
 * still left, so a change to the operation's wording cannot slip into the product unnoticed.
 */
export function standaloneText(text: string): string {
  const out = text
    .replace(/,\s*never charged(?=[.;])/gi, "")
    .replace(/\s*\(free\)/gi, "")
    .split(/(?<=\.)\s+/)
    .map((sentence) => {
      const clauses = sentence.split(/;\s+/).filter((clause) => !SELLER_WORDS.test(clause));
      if (clauses.length === 0) return "";
      const joined = clauses.join("; ");
      return /[.!?]$/.test(joined) ? joined : `${joined}.`;
    })
    .filter(Boolean)
    .join(" ")
    .replace(/\s+/g, " ")
    .trim();
  const left = SELLER_WORDS.exec(out);
  if (left)
    throw new Error(`the unit-conversion contract would say "${left[0]}" (seller's wording): "${out}"`);
  return out;
}

/** The standalone service's OpenAPI 3.1 contract, from the same schemas the paid operation uses. */
export function unitConversionOpenApi(version: string) {
  const example = unitConvert.example;
  return {
    openapi: "3.1.0",
    info: {
      title: "Engineering unit conversion API",
      version,
      description: standaloneText(unitConvert.description),
      license: {
        name: "utility402 single-organisation licence 1.0 (see LICENSE)",
        identifier: "LicenseRef-utility402-single-organisation",
      },
    },
    servers: [{ url: "http://localhost:8080" }],
    tags: [{ name: "units", description: "Exact engineering unit conversion." }],
    paths: {
      "/v1/unit-convert": {
        post: {
          operationId: "unitConvert",
          tags: ["units"],
          summary: standaloneText(unitConvert.summary),
          requestBody: {
            required: true,
            content: {
              "application/json": { schema: inputJsonSchema(unitConvert), example: example.input },
            },
          },
          responses: {
            "200": {
              description: "The conversion, or `results` for a batch.",
              content: {
                "application/json": { schema: outputJsonSchema(unitConvert), example: example.output },
              },
            },
            "400": problem("Invalid request: one `errors` entry per field, with a JSON Pointer."),
            "413": problem("The body exceeds 1 MiB."),
            "415": problem("The body is not application/json."),
          },
        },
      },
      "/v1/units": {
        get: {
          operationId: "listUnits",
          tags: ["units"],
          summary: standaloneText(unitListRoute.summary),
          description: standaloneText(unitListRoute.description),
          responses: {
            "200": {
              description: "Every unit with its exact factor, and the refused ambiguous names.",
              content: {
                "application/json": {
                  schema: outputJsonSchema({ output: unitListRoute.output } as AnyOperation),
                },
              },
            },
          },
        },
      },
      "/healthz": {
        get: {
          operationId: "health",
          tags: ["units"],
          summary: "Liveness",
          responses: {
            "200": {
              description: "The service is up.",
              content: {
                "application/json": {
                  schema: { type: "object", required: ["status"], properties: { status: { const: "ok" } } },
                },
              },
            },
          },
        },
      },
      "/openapi.json": {
        get: {
          operationId: "contract",
          tags: ["units"],
          summary: "This contract",
          responses: {
            "200": {
              description: "OpenAPI 3.1",
              content: { "application/json": { schema: { type: "object" } } },
            },
          },
        },
      },
    },
    components: { schemas: { Problem: ProblemSchema } },
  };
}

/** Every file of the product that is generated (the hand-written ones come from its source folder). */
export async function unitConversionGeneratedEntries(version: string): Promise<ArchiveEntry[]> {
  return [
    ...[...generatedModules()].map(([modulePath, data]) => ({ path: modulePath, data })),
    { path: "data/units.json", data: fs.readFileSync(UNIT_TABLE_URL) },
    {
      path: "openapi.json",
      data: Buffer.from(`${JSON.stringify(unitConversionOpenApi(version), null, 2)}\n`),
    },
    ...(await vendorZod()),
  ];
}
