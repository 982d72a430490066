import fs from "node:fs";
import path from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";
import { buildOpenApiDocument } from "./documents/openapi.ts";
import { PROBLEM_TYPES, Problem, problemTypeList } from "./problem.ts";

const catalogue: Record<string, { status: number; title: string }> = PROBLEM_TYPES;

/** The places that build a Problem from values rather than literals, each with why it stays in the catalogue. */
const BUILT_FROM_VALUES: Record<string, string> = {
  "src/problem.ts": "Problem.of reads status and title from the catalogue",
  "src/operations/worker-pool.ts":
    "revives a problem a worker built (with Problem.of) from its serialized fields",
};

function productionFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true, recursive: true }).flatMap((entry) => {
    const file = path.join(entry.parentPath, entry.name);
    return entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [file] : [];
  });
}

/** Every `new Problem(…)` and `Problem.of(…)` in src/ (tests left out), with its literal arguments. */
function problemSites() {
  const sites: { where: string; file: string; call: "new" | "of"; args: (string | number | undefined)[] }[] =
    [];
  const literals = new Set<string>();
  for (const file of productionFiles("src")) {
    const relative = path.relative(".", file).split(path.sep).join("/");
    const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, true);
    const visit = (node: ts.Node) => {
      const isPropertyName =
        node.parent !== undefined && ts.isPropertyAssignment(node.parent) && node.parent.name === node;
      if (ts.isStringLiteral(node) && !isPropertyName) literals.add(node.text);
      const literal = (arg: ts.Expression | undefined) =>
        arg && ts.isStringLiteral(arg)
          ? arg.text
          : arg && ts.isNumericLiteral(arg)
            ? Number(arg.text)
            : undefined;
      const where = `${relative}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`;
      if (ts.isNewExpression(node) && node.expression.getText(source) === "Problem") {
        sites.push({
          where,
          file: relative,
          call: "new",
          args: (node.arguments ?? []).slice(0, 3).map(literal),
        });
      }
      if (ts.isCallExpression(node) && node.expression.getText(source) === "Problem.of") {
        sites.push({ where, file: relative, call: "of", args: node.arguments.slice(0, 1).map(literal) });
      }
      ts.forEachChild(node, visit);
    };
    visit(source);
  }
  return { sites, literals };
}

describe("the catalogue of problem types (src/problem.ts)", () => {
  const { sites, literals } = problemSites();

  it("holds every problem type src/ builds, with the status and title it is built with", () => {
    expect(sites.length).toBeGreaterThan(30);
    const wrong: string[] = [];
    for (const { where, file, call, args } of sites) {
      const [first, second, third] = args;
      if (call === "of") {
        if (first === undefined) {
          if (!BUILT_FROM_VALUES[file]) wrong.push(`${where}: Problem.of with a slug that is not a literal`);
        } else if (!catalogue[first]) wrong.push(`${where}: "${first}" is not in the catalogue`);
        continue;
      }
      if (first === undefined || second === undefined || third === undefined) {
        if (!BUILT_FROM_VALUES[file])
          wrong.push(`${where}: new Problem from values outside BUILT_FROM_VALUES`);
        continue;
      }
      const entry = catalogue[second];
      if (!entry) wrong.push(`${where}: "${second}" is not in the catalogue`);
      else if (entry.status !== first || entry.title !== third) {
        wrong.push(
          `${where}: "${second}" built as ${first} "${third}", catalogued as ${entry.status} "${entry.title}"`,
        );
      }
    }
    expect(wrong).toEqual([]);
  });

  it("holds no type that src/ never names", () => {
    expect(Object.keys(PROBLEM_TYPES).filter((slug) => !literals.has(slug))).toEqual([]);
  });

  it("gives each type a client or server error status and a title", () => {
    for (const [slug, { status, title }] of Object.entries(catalogue)) {
      expect(slug).toMatch(/^[a-z]+(-[a-z]+)*$/);
      expect(status >= 400 && status < 600, slug).toBe(true);
      expect(title.length).toBeGreaterThan(0);
    }
  });

  it("builds a problem's status, title and URN from the catalogue", () => {
    expect(Problem.of("job-not-found", "no job with id 1").body()).toEqual({
      type: "urn:utility402:problem:job-not-found",
      title: "Unknown job",
      status: 404,
      detail: "no job with id 1",
    });
  });

  it("is listed in /openapi.json: x-problem-types, and the Problem schema's type as an enum", () => {
    const document = buildOpenApiDocument([], [], new Map(), "http://127.0.0.1:8402") as {
      "x-problem-types": unknown;
      components: { schemas: { Problem: { properties: { type: { enum: string[] } } } } };
    };
    expect(document["x-problem-types"]).toEqual(problemTypeList());
    expect(document["x-problem-types"]).toContainEqual({
      type: "urn:utility402:problem:payment-rejected",
      status: 402,
      title: "Payment rejected",
    });
    expect(document.components.schemas.Problem.properties.type.enum).toEqual(
      Object.keys(PROBLEM_TYPES).map((slug) => `urn:utility402:problem:${slug}`),
    );
  });
});
