import { describe, expect, it } from "vitest";
import { zodIssuesToFieldErrors } from "../../problem.ts";
import { HAZARD_TYPES, SUBSYSTEM_IDS } from "./catalogue.ts";
import { humanoidFmeaQuery } from "./index.ts";
import { CATALOGUE } from "./query.ts";
import { HumanoidFmeaQueryRequest, HumanoidFmeaQueryResponse } from "./schema.ts";

/** The field errors of the 400 the service answers for an invalid body (before any payment). */
function errors(body: unknown) {
  const parsed = HumanoidFmeaQueryRequest.safeParse(body);
  if (parsed.success) throw new Error(`expected ${JSON.stringify(body)} to be invalid`);
  return zodIssuesToFieldErrors(parsed.error.issues);
}

describe("request validation", () => {
  it("applies the defaults: limit 20, offset 0, no filters", () => {
    expect(HumanoidFmeaQueryRequest.parse({})).toEqual({ limit: 20, offset: 0 });
  });

  it("an unknown subsystem is a 400 at /subsystem listing the 12 valid ones", () => {
    const [error, ...rest] = errors({ subsystem: "legs" });
    expect(rest).toEqual([]);
    expect(error?.pointer).toBe("/subsystem");
    for (const id of SUBSYSTEM_IDS) expect(error?.message).toContain(id);
  });

  it("an unknown standard is a 400 at /standard listing every cited standard", () => {
    const [error, ...rest] = errors({ standard: "ISO 9999" });
    expect(rest).toEqual([]);
    expect(error?.pointer).toBe("/standard");
    expect(error?.message).toContain('no cited standard matches "ISO 9999"');
    for (const standard of CATALOGUE.standards) expect(error?.message).toContain(standard);
    expect(errors({ standard: "ISO 13849-1:2015" })[0]?.pointer).toBe("/standard");
    expect(errors({ standard: "ISO 13855:2010" })[0]?.pointer).toBe("/standard");
    expect(errors({ standard: "ISO" })[0]?.pointer).toBe("/standard");
  });

  it("an unknown hazard type lists the ISO 12100 groups; an unknown id points into the array", () => {
    const [hazard] = errors({ hazardType: "laser" });
    expect(hazard?.pointer).toBe("/hazardType");
    for (const type of HAZARD_TYPES) expect(hazard?.message).toContain(type);
    expect(errors({ ids: ["HFM-ACT-01", "HFM-ACT-13", "HFM-NAV-08", "nope"] })).toEqual([
      { pointer: "/ids/1", message: expect.stringContaining('unknown id "HFM-ACT-13"') },
      { pointer: "/ids/3", message: expect.stringContaining('unknown id "nope"') },
    ]);
  });

  it("refuses out-of-range numbers, empty or wordless text, empty ids and unknown properties", () => {
    const pointers = (body: unknown) => errors(body).map((e) => e.pointer);
    expect(pointers({ limit: 0 })).toEqual(["/limit"]);
    expect(pointers({ limit: 97 })).toEqual(["/limit"]);
    expect(pointers({ limit: 2.5 })).toEqual(["/limit"]);
    expect(pointers({ offset: -1 })).toEqual(["/offset"]);
    expect(pointers({ offset: 96 })).toEqual(["/offset"]);
    expect(pointers({ minSeverity: 11 })).toEqual(["/minSeverity"]);
    expect(pointers({ actionPriority: "X" })).toEqual(["/actionPriority"]);
    expect(pointers({ text: "" })).toEqual(["/text"]);
    expect(pointers({ text: "the of a !!" })).toEqual(["/text"]);
    expect(pointers({ text: "x".repeat(201) })).toEqual(["/text"]);
    expect(pointers({ ids: [] })).toEqual(["/ids"]);
    expect(pointers({ ids: [""] })).toEqual(["/ids/0"]);
    expect(pointers({ standard: "" })).toEqual(["/standard"]);
    expect(pointers({ query: "fall" })).toEqual(["/query"]);
    expect(pointers({ subsystem: "legs", standard: "ISO 1", limit: 0 })).toEqual([
      "/subsystem",
      "/standard",
      "/limit",
    ]);
  });
});

describe("the operation", () => {
  it("answers through its handler with a body the response schema accepts", async () => {
    const input = HumanoidFmeaQueryRequest.parse({ text: "battery", actionPriority: "H", limit: 2 });
    const { body } = await (humanoidFmeaQuery.handler as NonNullable<typeof humanoidFmeaQuery.handler>)(
      input,
      {} as never,
    );
    expect(HumanoidFmeaQueryResponse.parse(body)).toEqual(body);
    expect(body.count).toBe(2);
    expect(body.items.every((i) => i.actionPriority === "H" && typeof i.score === "number")).toBe(true);
  });

  it("documents a real answer as its example", () => {
    const output = humanoidFmeaQuery.example.output as { items: { id: string }[] };
    expect(output.items.map((i) => i.id)).toEqual(["HFM-BAL-07"]);
    expect(output).toMatchObject({ catalogueVersion: "2.3.0" });
    expect(HumanoidFmeaQueryResponse.safeParse(output).success).toBe(true);
  });
});
