// A JSON Schema (2020-12) validator for the keywords data contracts use, no dependencies:
// type, enum, const, required, properties, additionalProperties, items, minItems, maxItems,
// uniqueItems, minLength, maxLength, pattern, format (date, date-time, email, uri), minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, anyOf, oneOf, allOf, not, $ref to
// #/$defs. An unsupported keyword is an error, never silently ignored.

const SUPPORTED = new Set([
  "$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default", "$ref",
  "type", "enum", "const", "required", "properties", "additionalProperties", "items", "minItems",
  "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "not",
]);

const FORMATS = {
  date: (s) => /^\d{4}-\d{2}-\d{2}$/.test(s) && !Number.isNaN(Date.parse(`${s}T00:00:00Z`)) && new Date(`${s}T00:00:00Z`).toISOString().startsWith(s),
  "date-time": (s) => /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(s) && !Number.isNaN(Date.parse(s)),
  email: (s) => /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(s),
  uri: (s) => { try { return Boolean(new URL(s).protocol); } catch { return false; } },
};

const typeOf = (value) =>
  value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;
const typeMatches = (type, value) => {
  const actual = typeOf(value);
  return actual === type || (type === "number" && actual === "integer");
};
const escape = (token) => String(token).replaceAll("~", "~0").replaceAll("/", "~1");
const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Checks that a schema uses only supported keywords; returns the problems. */
export function checkSchema(schema, pointer = "") {
  const problems = [];
  if (typeof schema === "boolean") return problems;
  if (typeof schema !== "object" || schema === null) return [`${pointer || "/"}: a schema is an object or a boolean`];
  for (const key of Object.keys(schema)) {
    if (!SUPPORTED.has(key)) problems.push(`${pointer}/${escape(key)}: keyword not supported by this validator`);
  }
  for (const key of ["properties", "$defs"]) {
    for (const [name, child] of Object.entries(schema[key] ?? {})) problems.push(...checkSchema(child, `${pointer}/${key}/${escape(name)}`));
  }
  for (const key of ["items", "additionalProperties", "not"]) {
    if (schema[key] !== undefined && typeof schema[key] === "object") problems.push(...checkSchema(schema[key], `${pointer}/${key}`));
  }
  for (const key of ["anyOf", "oneOf", "allOf"]) {
    (schema[key] ?? []).forEach((child, i) => problems.push(...checkSchema(child, `${pointer}/${key}/${i}`)));
  }
  return problems;
}

/** Validates a value; returns [{ pointer, message }] (empty when valid). */
export function validate(schema, value, root = schema, pointer = "") {
  if (schema === true) return [];
  if (schema === false) return [{ pointer, message: "no value is allowed here" }];
  const errors = [];
  const add = (message, at = pointer) => errors.push({ pointer: at, message });
  if (schema.$ref) {
    const match = /^#\/\$defs\/(.+)$/.exec(schema.$ref);
    const target = match && root.$defs?.[match[1]];
    if (!target) add(`unresolvable $ref ${schema.$ref}`);
    else errors.push(...validate(target, value, root, pointer));
  }
  if (schema.type !== undefined) {
    const types = [].concat(schema.type);
    if (!types.some((type) => typeMatches(type, value))) {
      add(`expected ${types.join(" or ")}, got ${typeOf(value)}`);
      return errors;
    }
  }
  if (schema.enum && !schema.enum.some((option) => equal(option, value))) add(`must be one of ${JSON.stringify(schema.enum)}`);
  if (schema.const !== undefined && !equal(schema.const, value)) add(`must be ${JSON.stringify(schema.const)}`);
  if (typeof value === "string") {
    const length = [...value].length;
    if (schema.minLength !== undefined && length < schema.minLength) add(`shorter than ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && length > schema.maxLength) add(`longer than ${schema.maxLength} characters`);
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, "u").test(value)) add(`does not match ${schema.pattern}`);
    if (schema.format !== undefined && FORMATS[schema.format] && !FORMATS[schema.format](value)) add(`not a valid ${schema.format}`);
  }
  if (typeof value === "number") {
    if (schema.minimum !== undefined && value < schema.minimum) add(`less than ${schema.minimum}`);
    if (schema.maximum !== undefined && value > schema.maximum) add(`greater than ${schema.maximum}`);
    if (schema.exclusiveMinimum !== undefined && value <= schema.exclusiveMinimum) add(`not greater than ${schema.exclusiveMinimum}`);
    if (schema.exclusiveMaximum !== undefined && value >= schema.exclusiveMaximum) add(`not less than ${schema.exclusiveMaximum}`);
    if (schema.multipleOf !== undefined && Math.abs(value / schema.multipleOf - Math.round(value / schema.multipleOf)) > 1e-9) add(`not a multiple of ${schema.multipleOf}`);
  }
  if (Array.isArray(value)) {
    if (schema.minItems !== undefined && value.length < schema.minItems) add(`fewer than ${schema.minItems} items`);
    if (schema.maxItems !== undefined && value.length > schema.maxItems) add(`more than ${schema.maxItems} items`);
    if (schema.uniqueItems && new Set(value.map((v) => JSON.stringify(v))).size !== value.length) add("items are not unique");
    if (schema.items !== undefined) value.forEach((item, i) => errors.push(...validate(schema.items, item, root, `${pointer}/${i}`)));
  }
  if (typeOf(value) === "object") {
    for (const name of schema.required ?? []) if (!Object.hasOwn(value, name)) add("required property is missing", `${pointer}/${escape(name)}`);
    for (const [name, child] of Object.entries(value)) {
      const at = `${pointer}/${escape(name)}`;
      if (schema.properties && Object.hasOwn(schema.properties, name)) errors.push(...validate(schema.properties[name], child, root, at));
      else if (schema.additionalProperties === false) add("property is not allowed", at);
      else if (typeof schema.additionalProperties === "object") errors.push(...validate(schema.additionalProperties, child, root, at));
    }
  }
  for (const child of schema.allOf ?? []) errors.push(...validate(child, value, root, pointer));
  if (schema.anyOf && !schema.anyOf.some((child) => validate(child, value, root, pointer).length === 0)) add("matches none of anyOf");
  if (schema.oneOf) {
    const matches = schema.oneOf.filter((child) => validate(child, value, root, pointer).length === 0).length;
    if (matches !== 1) add(`matches ${matches} of oneOf, expected exactly 1`);
  }
  if (schema.not && validate(schema.not, value, root, pointer).length === 0) add("matches the schema under not");
  return errors;
}
