import { z } from "zod";

/**
 * The parts settings read from the environment are made of: the schemas of common kinds of variable,
 * and the contract of an operation's settings (its `settings.ts`), which config.ts composes.
 */

export const address = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address");
export const privateKey = z
  .string()
  .regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex private key");
export const port = z.coerce
  .number({ error: "must be a port number (1-65535)" })
  .int("must be a port number (1-65535)")
  .min(1)
  .max(65535);
export const httpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });
/** A variable that may be unset; set to the empty string it is unset too. */
export const optional = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === "" ? undefined : value), schema.optional());

/** Each variable's value; one that failed its own schema is undefined. */
export type EnvValues<Variables extends z.ZodRawShape> = z.output<z.ZodObject<Variables>>;

/** What the service has read of its own settings by the time an operation's settings are read. */
export interface ServiceBasics {
  /** The service's public URL, without a trailing slash. */
  baseUrl: string;
  /** DATA_DIR, absolute. */
  dataDir: string;
}

/** An operation's settings: the variables it reads, the problems between them, and its typed settings. */
export interface EnvSettings<Variables extends z.ZodRawShape, Settings> {
  /** Each variable's schema, its default included; every variable is checked on its own. */
  variables: Variables;
  /** Problems between variables, one line each ("NAME: why"), found after each variable's own check. */
  check?(values: EnvValues<Variables>): string[];
  /** The typed settings, read when there is no problem at all. */
  read(values: EnvValues<Variables>, service: ServiceBasics): Settings;
}

/** Names an operation's settings with their types inferred. */
export const envSettings = <Variables extends z.ZodRawShape, Settings>(
  settings: EnvSettings<Variables, Settings>,
) => settings;

/**
 * Checks each variable on its own, so that every problem is reported at once, one line each
 * ("NAME: message") in `problems`; a variable that fails is left undefined.
 */
export function readVariables<Variables extends z.ZodRawShape>(
  variables: Variables,
  env: Record<string, string | undefined>,
  problems: string[],
): EnvValues<Variables> {
  const values: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(variables)) {
    const result = (schema as z.ZodType).safeParse(env[name]);
    if (result.success) values[name] = result.data;
    else problems.push(`${name}: ${result.error.issues.map((issue) => issue.message).join("; ")}`);
  }
  return values as EnvValues<Variables>;
}
