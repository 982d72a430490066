import { afterEach, describe, expect, it, vi } from "vitest";
import { Problem } from "../../problem.ts";
import { type DiffResult, Edit } from "./diff.ts";
import { jsonDiff } from "./json-diff.ts";
import { type JsonDiffInput, JsonDiffRequest } from "./schema.ts";

// A diff with a bug: the tests below make diffJson's answer wrong on purpose and expect the
// operation's own check (apply the patch to before, compare with after) to refuse to answer.
const sabotage = vi.hoisted(() => ({
  current: undefined as ((result: DiffResult) => DiffResult) | undefined,
}));

vi.mock("./diff.ts", async (importOriginal) => {
  const original = await importOriginal<typeof import("./diff.ts")>();
  return {
    ...original,
    diffJson: (...args: Parameters<typeof original.diffJson>) => {
      const result = original.diffJson(...args);
      return sabotage.current ? sabotage.current(result) : result;
    },
  };
});

const input = JsonDiffRequest.parse({
  before: { a: 1, b: [1, 2] },
  after: { a: 2, b: [1] },
}) as JsonDiffInput;

function failure(): Problem {
  try {
    jsonDiff(input);
  } catch (error) {
    if (error instanceof Problem) return error;
    throw error;
  }
  throw new Error("expected the diff to fail its check");
}

describe("the operation checks its own patch before answering", () => {
  afterEach(() => {
    sabotage.current = undefined;
  });

  it("answers normally when the patch is right", () => {
    expect(jsonDiff(input).stats.operations).toBe(2);
  });

  it("refuses (500, nothing charged) a patch that misses an operation", () => {
    sabotage.current = (result) => ({ ...result, edits: result.edits.slice(1) });
    const problem = failure();
    expect(problem.status).toBe(500);
    expect(problem.slug).toBe("diff-check-failed");
    expect(problem.detail).toContain("the patch does not turn before into after");
    expect(problem.detail).toContain("nothing was charged");
  });

  it("refuses a patch with an operation that does not apply", () => {
    sabotage.current = (result) => ({
      ...result,
      edits: [...result.edits, new Edit("remove", "/missing", undefined, 1)],
    });
    expect(failure().detail).toContain('no member "missing"');
  });

  it("refuses an empty patch for documents that differ", () => {
    sabotage.current = (result) => ({ ...result, edits: [] });
    expect(failure().detail).toContain("0 operations for documents that are not equal");
  });
});
