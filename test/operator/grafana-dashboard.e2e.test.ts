import fs from "node:fs";
import path from "node:path";
import { parser } from "@prometheus-io/lezer-promql";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startTestService, type TestService } from "../helpers/service.ts";
import { declaredFamilies } from "./exposition.ts";

const DASHBOARD = path.resolve(import.meta.dirname, "../../deploy/grafana/utility402.json");

interface Panel {
  id: number;
  title: string;
  type: string;
  targets?: { expr: string }[];
  panels?: Panel[];
}

const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, "utf8")) as {
  panels: Panel[];
  templating: { list: { name: string; type: string; definition?: string }[] };
};
const allPanels = (panels: Panel[]): Panel[] =>
  panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);
/** Every PromQL expression of the dashboard's panels. */
const expressions = allPanels(dashboard.panels).flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
);
/** Grafana's own interval variables become a duration before Prometheus sees the query. */
const asPrometheusSees = (expr: string) => expr.replace(/\$__(rate_interval|interval|range)\b/g, "5m");

/** The metric names a PromQL expression selects, read with Prometheus' own grammar; throws on a syntax error. */
function selectedMetrics(expr: string): string[] {
  const names: string[] = [];
  const errors: number[] = [];
  parser.parse(expr).iterate({
    enter(node) {
      if (node.type.isError) errors.push(node.from);
      if (node.name === "Identifier" && node.node.parent?.name === "VectorSelector") {
        names.push(expr.slice(node.from, node.to));
      }
    },
  });
  if (errors.length > 0) throw new Error(`PromQL syntax error at ${errors[0]} in ${expr}`);
  return names;
}

/** The family a sample name belongs to: a histogram's _bucket, _sum and _count are its family's. */
function familyOf(name: string, families: Map<string, string>): string | undefined {
  if (families.has(name)) return name;
  const base = name.replace(/_(bucket|sum|count)$/, "");
  return ["histogram", "summary"].includes(families.get(base) ?? "") ? base : undefined;
}

describe("deploy/grafana/utility402.json", () => {
  let service: TestService;
  let families: Map<string, string>;

  beforeAll(async () => {
    service = await startTestService();
    families = declaredFamilies(await (await fetch(`${service.url}/metrics`)).text());
  });
  afterAll(async () => {
    await service?.stop();
  });

  it("reads the selector of a PromQL expression, and refuses one that is not PromQL", () => {
    expect(
      selectedMetrics('histogram_quantile(0.9, sum by (le) (rate(a_bucket{job=~"x"}[5m]))) / on() b'),
    ).toEqual(["a_bucket", "b"]);
    expect(() => selectedMetrics("sum by (le (rate(a[5m]))")).toThrow(/syntax error/);
  });

  it("queries only metrics a running service exposes at /metrics, in valid PromQL", () => {
    expect(expressions.length).toBeGreaterThan(10);
    const missing: string[] = [];
    for (const { panel, expr } of expressions) {
      for (const name of selectedMetrics(asPrometheusSees(expr))) {
        if (!familyOf(name, families)) missing.push(`${panel}: ${name}`);
      }
    }
    for (const variable of dashboard.templating.list) {
      const metric = /^label_values\(([a-zA-Z_:][a-zA-Z0-9_:]*),/.exec(variable.definition ?? "")?.[1];
      if (variable.type === "query") expect(metric, variable.name).toBeDefined();
      if (metric && !families.has(metric)) missing.push(`variable ${variable.name}: ${metric}`);
    }
    expect(missing).toEqual([]);
  });

  it("charts every utility402 metric the service exposes, and the standard process and Node.js ones", () => {
    const used = new Set(
      expressions.flatMap(({ expr }) =>
        selectedMetrics(asPrometheusSees(expr)).map((name) => familyOf(name, families)),
      ),
    );
    const ours = [...families.keys()].filter((name) => name.startsWith("utility402_"));
    expect(ours.filter((name) => !used.has(name))).toEqual([]);
    for (const name of [
      "process_cpu_seconds_total",
      "process_resident_memory_bytes",
      "nodejs_heap_size_used_bytes",
    ]) {
      expect(used.has(name), name).toBe(true);
    }
  });

  it("is one dashboard Grafana can import: unique panel ids, the Prometheus data source as a variable", () => {
    const ids = allPanels(dashboard.panels).map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    expect(dashboard.templating.list.find((variable) => variable.type === "datasource")?.name).toBe(
      "datasource",
    );
    const raw = fs.readFileSync(DASHBOARD, "utf8");
    expect(raw).not.toMatch(/"uid":\s*"(?!\$\{datasource\}|utility402")/);
  });
});
