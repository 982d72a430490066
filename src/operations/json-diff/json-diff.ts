import { Problem } from "../../problem.ts";
import { applyPatch, jsonEqual, PatchError } from "./apply-patch.ts";
import { CanonicalWriter, type Json, sha256 } from "./canonical.ts";
import { diffJson, type Edit } from "./diff.ts";
import type { JsonDiffInput, JsonDiffOutput } from "./schema.ts";

/**
 * Diffs two documents validated by JsonDiffRequest. Pure: the same input always gives the same
 * output, byte for byte. The complete patch is applied to `before` and checked against `after`
 * before anything is returned; a mismatch is a 500 (nothing is charged).
 */
export function jsonDiff(input: JsonDiffInput): JsonDiffOutput {
  const { edits, before, after } = diffJson(input.before, input.after, {
    arrayMode: input.arrayMode,
    ...(input.arrayKey !== undefined ? { arrayKey: input.arrayKey } : {}),
    moves: input.moves,
    testOldValues: input.testOldValues,
  });
  const equal = Buffer.from(before.buffer, before.byteOffset, before.length).equals(after);
  if (equal !== (edits.length === 0))
    throw checkFailed(`${edits.length} operations for documents that are ${equal ? "" : "not "}equal`);
  if (!equal) checkPatch(input, edits);

  const stats = {
    operations: edits.length,
    add: 0,
    remove: 0,
    replace: 0,
    move: 0,
    copy: 0,
    test: 0,
    returned: 0,
  };
  for (const edit of edits) stats[edit.op]++;
  const patch: JsonDiffOutput["patch"] = [];
  const changes: JsonDiffOutput["changes"] = [];
  stats.returned = Math.min(edits.length, input.maxChanges);
  for (let i = 0; i < stats.returned; i++) {
    const { op, path, value, previous, from } = edits[i] as Edit;
    if (op === "remove") {
      patch.push({ op, path });
      changes.push({ op, path, previous });
    } else if (op === "add" || op === "test") {
      patch.push({ op, path, value });
      changes.push({ op, path, value });
    } else if (op === "move" || op === "copy") {
      patch.push({ op, from: from as string, path });
      changes.push({ op, from: from as string, path });
    } else {
      patch.push({ op, path, value });
      changes.push({ op, path, value, previous });
    }
  }
  return {
    equal,
    beforeHash: sha256(before),
    afterHash: sha256(after),
    patchHash: sha256(canonicalPatch(edits)),
    changes,
    patch,
    stats,
    truncated: edits.length > input.maxChanges,
  };
}

const ascii = (text: string) => Uint8Array.from(text, (c) => c.charCodeAt(0));
const OPERATION_START = {
  add: ascii('{"op":"add","path":'),
  remove: ascii('{"op":"remove","path":'),
  replace: ascii('{"op":"replace","path":'),
  test: ascii('{"op":"test","path":'),
  move: ascii(',"op":"move","path":'),
  copy: ascii(',"op":"copy","path":'),
};
const FROM = ascii('{"from":');
const VALUE = ascii(',"value":');

/** The RFC 8785 form of the complete patch (members from < op < path < value), written without building it. */
export function canonicalPatch(edits: readonly Edit[]): Uint8Array {
  const writer = new CanonicalWriter();
  writer.byte(0x5b);
  for (let i = 0; i < edits.length; i++) {
    const { op, path, value, from } = edits[i] as Edit;
    if (i > 0) writer.byte(0x2c);
    if (op === "move" || op === "copy") {
      writer.raw(FROM);
      writer.string(from as string);
    }
    writer.raw(OPERATION_START[op]);
    writer.string(path);
    if (op !== "remove" && op !== "move" && op !== "copy") {
      writer.raw(VALUE);
      writer.value(value as Json);
    }
    writer.byte(0x7d);
  }
  writer.byte(0x5d);
  return writer.bytes();
}

function checkPatch(input: JsonDiffInput, edits: readonly Edit[]): void {
  let reproduced = false;
  let reason = "the result differs from after";
  try {
    reproduced = jsonEqual(applyPatch(input.before, edits), input.after);
  } catch (error) {
    if (!(error instanceof PatchError)) throw error;
    reason = error.message;
  }
  if (!reproduced) throw checkFailed(`the patch does not turn before into after: ${reason}`);
}

const checkFailed = (reason: string) =>
  Problem.of(
    "diff-check-failed",
    `the computed diff failed its own check (${reason}); this is a bug in the service, nothing was charged`,
  );
