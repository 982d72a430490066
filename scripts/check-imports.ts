/**
 * The import check CI runs (`npm run lint`): no import loop anywhere under a folder (src/ by default),
 * and the layer rules of docs/architecture.md. It follows every static import and re-export of a .ts
 * file, type-only ones too: a type-only loop still ties the modules' meanings together, and the next
 * change that turns one type import into a value import would make it a loop at run time. Dynamic
 * `import()` is not followed (it is how a module loads another one lazily, on purpose).
 *
 * Usage: tsx scripts/check-imports.ts [folder]. It prints each loop as a chain of files and each
 * forbidden import, and exits 1 when it finds any.
 */
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const matches = (file: string, pattern: string) =>
  pattern.endsWith("/") ? file.startsWith(pattern) : file === pattern;

/**
 * A file (or folder, ending in "/") of the checked tree that must not import any of `forbidden`, or, a
 * leaf, imports nothing of the checked tree but `only`.
 */
export type LayerRule = { from: string; why: string } & ({ forbidden: string[] } | { only: string[] });

/** Paths relative to the checked folder (src/). */
export const LAYER_RULES: LayerRule[] = [
  {
    from: "contract/",
    only: ["contract/"],
    why: "the operation contract is a leaf every operation folder imports: it names no service singleton and no room above it",
  },
  {
    from: "operations/",
    forbidden: ["payments/", "http/", "mcp/", "documents/", "catalog/", "app.ts"],
    why: "an operation is a pure utility: it knows neither how it is paid for, nor how it is served, nor the list it is on",
  },
  {
    from: "payments/",
    forbidden: ["catalog/", "documents/", "mcp/"],
    why: "payments work on the operation they are given, never on the list of all operations or the documents",
  },
  {
    from: "catalog/",
    forbidden: ["documents/", "mcp/", "http/"],
    why: "the registry stands below the doors, which serve what it lists",
  },
  {
    from: "mcp/",
    forbidden: ["documents/"],
    why: "the documents stand above the doors: they describe the MCP door, the door never reads them",
  },
  {
    from: "http/",
    forbidden: ["documents/"],
    why: "the documents stand above the doors: they describe the HTTP routes, the routes never read them",
  },
];

const breaks = (rule: LayerRule, target: string) =>
  "only" in rule
    ? !rule.only.some((pattern) => matches(target, pattern))
    : rule.forbidden.some((pattern) => matches(target, pattern));

const ruleText = (rule: LayerRule) =>
  "only" in rule
    ? `${rule.from} imports only ${rule.only.join(", ")}`
    : `${rule.from} never imports ${rule.forbidden.join(", ")}`;

export interface LayerViolation {
  file: string;
  imports: string;
  rule: LayerRule;
}

export interface ImportReport {
  /** Each loop as a chain of files, the first file repeated at the end. */
  loops: string[][];
  violations: LayerViolation[];
}

function listTsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return entry.name === "node_modules" ? [] : listTsFiles(full);
    return entry.isFile() && entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [full] : [];
  });
}

/** The module specifiers of a file's static imports and re-exports, type-only ones included. */
function staticSpecifiers(file: string): string[] {
  const source = ts.createSourceFile(file, fs.readFileSync(file, "utf8"), ts.ScriptTarget.Latest, false);
  const specifiers: string[] = [];
  const visit = (node: ts.Node) => {
    if ((ts.isImportDeclaration(node) || ts.isExportDeclaration(node)) && node.moduleSpecifier) {
      if (ts.isStringLiteral(node.moduleSpecifier)) specifiers.push(node.moduleSpecifier.text);
    } else if (ts.isImportEqualsDeclaration(node) && ts.isExternalModuleReference(node.moduleReference)) {
      const expression = node.moduleReference.expression;
      if (ts.isStringLiteral(expression)) specifiers.push(expression.text);
    } else if (ts.isImportTypeNode(node)) {
      const argument = node.argument;
      if (ts.isLiteralTypeNode(argument) && ts.isStringLiteral(argument.literal))
        specifiers.push(argument.literal.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return specifiers;
}

/** The .ts file a relative specifier names, or undefined for a package or a non-TypeScript file. */
function resolveLocal(from: string, specifier: string): string | undefined {
  if (!specifier.startsWith(".")) return undefined;
  const base = path.resolve(path.dirname(from), specifier);
  const candidates = [base, base.replace(/\.js$/, ".ts"), `${base}.ts`, path.join(base, "index.ts")];
  return candidates.find(
    (candidate) => candidate.endsWith(".ts") && fs.statSync(candidate, { throwIfNoEntry: false })?.isFile(),
  );
}

/** Strongly connected components (Tarjan): sets of files that reach one another; a file in no loop is alone in its set. */
function tangles(graph: Map<string, string[]>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const onStack = new Set<string>();
  const stack: string[] = [];
  const components: string[][] = [];
  const connect = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node) as number);
    stack.push(node);
    onStack.add(node);
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        connect(next);
        low.set(node, Math.min(low.get(node) as number, low.get(next) as number));
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node) as number, index.get(next) as number));
      }
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop() as string;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      components.push(component);
    }
  };
  for (const node of [...graph.keys()].sort()) if (!index.has(node)) connect(node);
  return components;
}

/** The shortest chain of imports from `from` to `to` inside one tangle (breadth first), both ends included. */
function shortestPath(graph: Map<string, string[]>, tangle: Set<string>, from: string, to: string): string[] {
  const cameFrom = new Map<string, string>([[from, from]]);
  const queue = [from];
  for (let i = 0; i < queue.length && !cameFrom.has(to); i++) {
    const node = queue[i] as string;
    for (const next of graph.get(node) ?? []) {
      if (tangle.has(next) && !cameFrom.has(next)) {
        cameFrom.set(next, node);
        queue.push(next);
      }
    }
  }
  const path = [to];
  for (let at = to; at !== from; at = cameFrom.get(at) as string) path.unshift(cameFrom.get(at) as string);
  return path;
}

/**
 * Every loop (in each tangle of files that import one another, chains until every import inside it is
 * in one) and every layer violation under `root`. Paths in the report are relative
 * to `root`, with "/" separators.
 */
export function checkImports(root: string, rules: LayerRule[] = LAYER_RULES): ImportReport {
  const relative = (file: string) => path.relative(root, file).split(path.sep).join("/");
  const graph = new Map<string, string[]>();
  for (const file of listTsFiles(root).sort()) {
    const targets = staticSpecifiers(file)
      .map((specifier) => resolveLocal(file, specifier))
      .filter((target): target is string => target !== undefined && !relative(target).startsWith(".."));
    graph.set(relative(file), [...new Set(targets.map(relative))]);
  }

  const loops: string[][] = [];
  for (const tangle of tangles(graph)) {
    const members = new Set(tangle);
    // One chain per import inside the tangle that no earlier chain went through: the shortest loop over it.
    const covered = new Set<string>();
    for (const file of [...tangle].sort()) {
      for (const target of graph.get(file) ?? []) {
        if (!members.has(target) || covered.has(`${file} ${target}`)) continue;
        const loop = [file, ...shortestPath(graph, members, target, file)];
        for (let i = 1; i < loop.length; i++) covered.add(`${loop[i - 1]} ${loop[i]}`);
        loops.push(loop);
      }
    }
  }

  const violations: LayerViolation[] = [];
  for (const [file, targets] of graph) {
    for (const rule of rules) {
      if (!matches(file, rule.from)) continue;
      for (const target of targets)
        if (breaks(rule, target)) violations.push({ file, imports: target, rule });
    }
  }
  return { loops, violations };
}

export function formatReport(report: ImportReport, rootName: string): string[] {
  const at = (file: string) => `${rootName}/${file}`;
  return [
    ...report.loops.map((loop) => `import loop: ${loop.map(at).join(" → ")}`),
    ...report.violations.map(
      ({ file, imports, rule }) =>
        `layer rule: ${at(file)} imports ${at(imports)} (${ruleText(rule)}: ${rule.why})`,
    ),
  ];
}

/** The command: prints each problem of `rootName` on `error`, or an all-clear on `log`; returns the exit status. */
export function runCheck(
  rootName: string,
  out: { error(line: string): void; log(line: string): void } = console,
): number {
  const report = checkImports(path.resolve(rootName));
  const problems = formatReport(report, rootName.replace(/\/+$/, ""));
  for (const line of problems) out.error(line);
  if (problems.length > 0) return 1;
  out.log(`${rootName}: no import loop, no layer violation`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = runCheck(process.argv[2] ?? "src");
}
