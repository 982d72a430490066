import { afterEach, describe, expect, it } from "vitest";
import type { AuditJob } from "../../src/operations/openapi-audit/audit.ts";
import type { ContractDocument } from "../../src/operations/openapi-audit/contract.ts";
import { LINEAR_FOR_REGEXP, linearRegExp } from "../../src/operations/openapi-audit/linear-regexp.ts";
import { AuditPool, type AuditPoolOptions } from "../../src/operations/openapi-audit/pool.ts";
import type { OpenApiAuditOutput } from "../../src/operations/openapi-audit/schema.ts";
import { Problem } from "../../src/problem.ts";
import { withTestDeadlines } from "../helpers/pool-deadlines.ts";
import { EVIL } from "./hostile-inputs.ts";

/**
 * Issue 16, finding 6: six audits of a contract whose schema pattern backtracks catastrophically
 * (`^(a+)+$` against "aaa…a!") held every audit worker until their time limit, never charged, while a
 * paying caller's trivial audit waited and was refused (503). Now the engines run the contract's
 * patterns in linear time (RE2JS), and each payer gets a fair share of the real worker pool.
 */

const HOSTILE = `0x${"a".repeat(40)}`;
const OTHER = `0x${"b".repeat(40)}`;
const CATASTROPHIC = "^(a+)+$";

const job = (document: ContractDocument): AuditJob => ({
  document,
  openapi: "3.1.0",
  ruleset: "recommended",
  maxFindings: 200,
});

/** A contract whose every example is tested against the catastrophic pattern, by both engines. */
const catastrophicContract = (variant: number, value = EVIL): ContractDocument => ({
  openapi: "3.1.0",
  info: { title: `ReDoS ${variant}`, version: "1.0.0" },
  paths: {
    "/names": {
      post: {
        operationId: `postName${variant}`,
        requestBody: {
          content: {
            "application/json": {
              schema: { type: "string", pattern: CATASTROPHIC, example: value },
              example: value,
            },
          },
        },
        responses: {
          "200": {
            description: "OK",
            content: {
              "application/json": {
                schema: {
                  type: "object",
                  properties: { name: { type: "string", pattern: CATASTROPHIC } },
                  patternProperties: { [CATASTROPHIC]: { type: "integer" } },
                },
                // The property's name is tested against the pattern property's name.
                example: { name: value, [value]: "not an integer" },
              },
            },
          },
        },
      },
    },
  },
});

const trivialContract: ContractDocument = {
  openapi: "3.1.0",
  info: { title: "Trivial", version: "1.0.0" },
  paths: {},
};

const pools: AuditPool[] = [];
const pool = (options: Partial<AuditPoolOptions> = {}) => {
  const created = withTestDeadlines(() => new AuditPool(options));
  pools.push(created);
  return created;
};
afterEach(async () => {
  await Promise.all(pools.splice(0).map((p) => p.close()));
});

const outcome = <R>(promise: Promise<R>) =>
  promise.then(
    (value) => ({ ok: true as const, value }),
    (error: unknown) => ({ ok: false as const, error }),
  );

describe("the audit pool under catastrophic patterns (real audit workers)", () => {
  it("six catastrophic audits from one payer: another payer's trivial audit is answered while they still wait", async () => {
    // The service's own limits (15 s per audit, 20 s in the queue; stretched in tests), two workers.
    const workers = pool({ size: 2 });
    await workers.warm();
    const hostileSettled: boolean[] = [];
    const hostile = Array.from({ length: 6 }, (_, i) =>
      outcome(workers.run(job(catastrophicContract(i)), HOSTILE)).finally(() => hostileSettled.push(true)),
    );
    // One hostile audit runs (its payer's cap), the other five wait for their payer's turn.
    expect(workers.stats).toMatchObject({ workers: 2, busy: 1, queued: 5 });

    const answer = workers.run(job(trivialContract), OTHER);
    // The other payer's audit starts at once, on the worker the hostile payer may not take.
    expect(workers.stats).toMatchObject({ workers: 2, busy: 2, queued: 5 });
    const trivial = await answer;

    expect(trivial).toMatchObject({ openapiVersion: "3.1.0", truncated: false });
    expect(hostileSettled.length).toBeLessThan(6);
    expect(workers.stats.busy + workers.stats.queued).toBeGreaterThan(0);

    // And the hostile audits finish well within their time limit: none is a 422, each has its findings.
    for (const result of await Promise.all(hostile)) {
      if (!result.ok) throw result.error;
      expect(exampleFindings(result.value)).toEqual(catastrophicFindings(EVIL));
    }
  });

  it("runs the catastrophic pattern in linear time in both engines, and still tells a match from a mismatch", async () => {
    const workers = pool({ size: 1 });
    const long = `${"a".repeat(100_000)}!`;
    const result = await outcome(workers.run(job(catastrophicContract(0, long)), HOSTILE));
    if (!result.ok) throw result.error;
    expect(exampleFindings(result.value)).toEqual(catastrophicFindings(long));

    // Values that match the pattern are accepted: the pattern is evaluated, not skipped.
    const matching = catastrophicContract(1, "aaaa") as { paths: Record<string, any> };
    matching.paths["/names"].post.responses["200"].content["application/json"].example = {
      name: "aaaa",
      aaaa: 4,
    };
    const accepted = await outcome(workers.run(job(matching as ContractDocument), HOSTILE));
    if (!accepted.ok) throw accepted.error;
    expect(exampleFindings(accepted.value)).toEqual([]);
  });

  it("a pattern RE2 cannot run (lookahead, backreference) is not evaluated, and the audit says where", async () => {
    const workers = pool({ size: 1 });
    const contract: ContractDocument = {
      openapi: "3.1.0",
      info: { title: "Lookahead", version: "1.0.0" },
      components: {
        schemas: {
          Password: { type: "string", pattern: "^(?=(a+)+$)", example: EVIL },
          Twice: { type: "object", patternProperties: { "^(a)\\1$": { type: "integer" } } },
        },
      },
    };
    const result = await outcome(workers.run(job(contract), HOSTILE));
    if (!result.ok) throw result.error;
    const notes = result.value.findings.filter((finding) => finding.ruleId === "pattern-not-evaluated");
    expect(notes.map(({ pointer, severity }) => ({ pointer, severity }))).toEqual([
      { pointer: "/components/schemas/Password/pattern", severity: "info" },
      { pointer: "/components/schemas/Twice/patternProperties/^(a)\\1$", severity: "info" },
    ]);
    expect(exampleFindings(result.value)).toEqual([]);
  });
});

describe("fair shares of the worker pool (stand-in worker: exact timings)", () => {
  const FAKE_WORKER = new URL("../helpers/audit-workers/fake-worker.mjs", import.meta.url);
  const slow = (label: string, delay = 150): AuditJob => ({
    document: { openapi: label, "x-delay": delay } as ContractDocument,
    openapi: label,
    ruleset: "recommended",
    maxFindings: 10,
  });

  it("serves payers in turn, each within its cap of running audits", async () => {
    const workers = pool({ size: 2, workerUrl: FAKE_WORKER });
    expect(workers.options.maxRunningPerClient).toBe(1);
    await workers.warm();
    const order: string[] = [];
    const run = (label: string, payer: string) =>
      workers.run(slow(label), payer).then((result) => order.push(result.openapiVersion));
    const all = [
      run("a1", HOSTILE),
      run("a2", HOSTILE),
      run("a3", HOSTILE),
      run("b1", OTHER),
      run("b2", OTHER),
    ];
    // a1 and b1 run (one each, the cap); a2, a3 and b2 wait in their payers' queues.
    expect(workers.stats).toMatchObject({ busy: 2, queued: 3 });
    await Promise.all(all);
    expect(order.slice(0, 2).sort()).toEqual(["a1", "b1"]);
    expect(order.slice(2, 4).sort()).toEqual(["a2", "b2"]);
    expect(order[4]).toBe("a3");
  });

  it("refuses a payer's audit beyond its own queue (503, nothing charged); other payers still queue", async () => {
    const workers = pool({ size: 1, maxQueuedPerClient: 2, workerUrl: FAKE_WORKER });
    await workers.warm();
    const runs = [1, 2, 3].map((i) => outcome(workers.run(slow(`a${i}`, 100), HOSTILE)));
    const refused = await outcome(workers.run(slow("a4"), HOSTILE));
    expect(refused.ok).toBe(false);
    const problem = (refused as { error: Problem }).error;
    expect(problem).toBeInstanceOf(Problem);
    expect([problem.status, problem.slug, problem.headers["retry-after"]]).toEqual([503, "audit-busy", "2"]);
    expect(problem.detail).toBe(
      "2 audits of this client are already waiting for a worker; retry shortly; nothing was charged",
    );
    const other = await outcome(workers.run(slow("b1", 0), OTHER));
    expect(other).toMatchObject({ ok: true, value: { openapiVersion: "b1" } });
    for (const run of await Promise.all(runs)) expect(run.ok).toBe(true);
  });

  it("audits that name no payer share one queue, in order, without the per-payer cap (other pools' behaviour)", async () => {
    const workers = pool({ size: 2, workerUrl: FAKE_WORKER });
    await workers.warm();
    const order: string[] = [];
    const all = ["n1", "n2", "n3"].map((label) =>
      workers.run(slow(label)).then((result) => order.push(result.openapiVersion)),
    );
    expect(workers.stats).toMatchObject({ busy: 2, queued: 1 });
    await Promise.all(all);
    expect(order[2]).toBe("n3");
  });
});

describe("the linear engine", () => {
  it("the linear engine keeps RegExp's syntax check: a pattern JavaScript refuses is refused", () => {
    expect(() => linearRegExp("(")).toThrow(SyntaxError);
    expect(linearRegExp(CATASTROPHIC).test(EVIL)).toBe(false);
    expect(linearRegExp(CATASTROPHIC).test("aaa")).toBe(true);
    expect(linearRegExp("^\\u00e9(?<word>\\w+)\\/$", "u").test("éabc/")).toBe(true);
  });

  it("keeps RegExp only for the engines' own patterns, each linear for a backtracking engine too", () => {
    for (const source of LINEAR_FOR_REGEXP) {
      const shape = source.replace(/\\./g, "e").replace(/\[[^\]]*\]/g, "c");
      const unbounded = (shape.match(/[*+{]/g) ?? []).length;
      const optional = (shape.match(/\?/g) ?? []).length;
      // No group, at most one unbounded quantifier (after a ^) and one optional: one pass to fail.
      expect({
        source,
        groups: /[()|]/.test(shape),
        unbounded,
        optional,
        anchored: shape.startsWith("^"),
      }).toEqual({
        source,
        groups: false,
        unbounded: Math.min(unbounded, 1),
        optional: Math.min(optional, 1),
        anchored: unbounded > 0 ? true : shape.startsWith("^"),
      });
      expect(linearRegExp(source)).toBeInstanceOf(RegExp);
    }
    expect(linearRegExp(CATASTROPHIC)).not.toBeInstanceOf(RegExp);
  });
});

/** The findings of the example checks (both engines' rules that test examples against schemas). */
function exampleFindings(output: OpenApiAuditOutput) {
  return output.findings
    .filter((finding) => /example/.test(finding.ruleId) && !finding.ruleId.startsWith("agent-"))
    .map(({ pointer, engines }) => ({ pointer, engines }));
}

const MEDIA = "/paths/~1names/post/requestBody/content/application~1json";
const catastrophicFindings = (value: string) => [
  {
    pointer: `${MEDIA}/example`,
    engines: ["redocly:no-invalid-media-type-examples", "spectral:oas3-valid-media-example"],
  },
  {
    pointer: `${MEDIA}/schema/example`,
    engines: ["redocly:no-invalid-schema-examples", "spectral:oas3-valid-schema-example"],
  },
  {
    pointer: "/paths/~1names/post/responses/200/content/application~1json/example/name",
    engines: ["redocly:no-invalid-media-type-examples", "spectral:oas3-valid-media-example"],
  },
  // Redocly's example rule allows no property the schema does not describe: the name matched no pattern.
  {
    pointer: `/paths/~1names/post/responses/200/content/application~1json/example/${value}`,
    engines: ["redocly:no-invalid-media-type-examples"],
  },
];
