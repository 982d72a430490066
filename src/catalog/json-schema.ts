import { z } from "zod";
import type { AnyOperation } from "./operation.ts";

/** JSON Schema (2020-12) of what a client sends: defaults make fields optional. */
export const inputJsonSchema = (operation: AnyOperation) =>
  z.toJSONSchema(operation.input, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;

/** JSON Schema (2020-12) of a successful response body. */
export const outputJsonSchema = (operation: AnyOperation) =>
  z.toJSONSchema(operation.output, { io: "output", unrepresentable: "any" }) as Record<string, unknown>;
