// A JSON Schema (2020-12) validator for the keywords data contracts use, no dependencies:
// type, enum, const, required, properties, additionalProperties, items, minItems, maxItems,
// uniqueItems, minLength, maxLength, pattern, format (date, date-time, time, email, uri, uuid, ipv4,
// hostname: any other format is refused), minimum,
// maximum, exclusiveMinimum, exclusiveMaximum, multipleOf, anyOf, oneOf, allOf, not, $ref to
// #/$defs. An unsupported keyword is an error, never silently ignored.

const SUPPORTED = new Set([
  "$schema", "$id", "$comment", "$defs", "title", "description", "examples", "default", "$ref",
  "type", "enum", "const", "required", "properties", "additionalProperties", "items", "minItems",
  "maxItems", "uniqueItems", "minLength", "maxLength", "pattern", "format", "minimum", "maximum",
  "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "anyOf", "oneOf", "allOf", "not",
]);

/** A real calendar day: 2024-02-29 yes, 2023-02-29 and 2024-02-30 no. */
const isCalendarDate = (s) => {
  const match = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!match) return false;
  const [year, month, day] = match.slice(1).map(Number);
  const days = [31, year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0) ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
  return month >= 1 && month <= 12 && day >= 1 && day <= days[month - 1];
};
/** RFC 3339 full-time: 23:59:60 allowed (a leap second), offsets within ±23:59. */
const isTime = (s) => {
  const match = /^(\d{2}):(\d{2}):(\d{2})(\.\d+)?(z|[+-](\d{2}):(\d{2}))$/i.exec(s);
  if (!match) return false;
  const [hour, minute, second] = match.slice(1, 4).map(Number);
  const offsetOk = match[6] === undefined || (Number(match[6]) <= 23 && Number(match[7]) <= 59);
  return hour <= 23 && minute <= 59 && second <= 60 && offsetOk;
};

/**
 * local@domain.tld: no whitespace, one @, something before it, a dot inside the domain. Checked with
 * indexOf, not a regular expression: /^[^\s@]+@[^\s@]+\.[^\s@]+$/ backtracks quadratically (a 400 KB
 * cell took 80 s).
 */
export const isEmail = (s) => {
  const at = s.indexOf("@");
  if (at < 1 || at !== s.lastIndexOf("@") || /\s/.test(s)) return false;
  const domain = s.slice(at + 1);
  return domain.lastIndexOf(".", domain.length - 2) >= 1;
};

/** The formats this validator checks; any other `format` is refused by checkSchema, never ignored. */
export const FORMATS = {
  date: isCalendarDate,
  "date-time": (s) => {
    const at = s.search(/[Tt ]/);
    return at === 10 && isCalendarDate(s.slice(0, 10)) && isTime(s.slice(11));
  },
  time: isTime,
  email: isEmail,
  uri: (s) => { try { return /^[a-z][a-z0-9+.-]*:/i.test(s) && Boolean(new URL(s).protocol); } catch { return false; } },
  uuid: (s) => /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s),
  ipv4: (s) => /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/.test(s),
  hostname: (s) => s.length <= 253 && /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)(\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*$/i.test(s),
};

const typeOf = (value) =>
  value === null ? "null" : Array.isArray(value) ? "array" : Number.isInteger(value) ? "integer" : typeof value;
const typeMatches = (type, value) => {
  const actual = typeOf(value);
  return actual === type || (type === "number" && actual === "integer");
};
const escaped = new Map();
/** A JSON Pointer token (RFC 6901), remembered: the same property names come back on every row. */
const escape = (token) => {
  let text = escaped.get(token);
  if (text === undefined) {
    text = String(token).replaceAll("~", "~0").replaceAll("/", "~1");
    if (escaped.size < 10_000) escaped.set(token, text);
  }
  return text;
};
const patterns = new WeakMap();
/** A schema's `pattern`, compiled once. */
const patternOf = (schema) => {
  let pattern = patterns.get(schema);
  if (!pattern) {
    pattern = new RegExp(schema.pattern, "u");
    patterns.set(schema, pattern);
  }
  return pattern;
};
const equal = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** Checks that a schema uses only supported keywords; returns the problems. */
export function checkSchema(schema, pointer = "") {
  const problems = [];
  if (typeof schema === "boolean") return problems;
  if (typeof schema !== "object" || schema === null) return [`${pointer || "/"}: a schema is an object or a boolean`];
  for (const key of Object.keys(schema)) {
    if (!SUPPORTED.has(key)) problems.push(`${pointer}/${escape(key)}: keyword not supported by this validator`);
  }
  if (schema.format !== undefined && !Object.hasOwn(FORMATS, schema.format)) {
    problems.push(`${pointer}/format: format "${schema.format}" is not checked by this validator (known: ${Object.keys(FORMATS).join(", ")})`);
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
  let errors = [];
  const add = (message, at = pointer) => errors.push({ pointer: at, message });
  const merge = (found) => {
    if (found.length > 0) errors = errors.concat(found);
  };
  if (schema.$ref) {
    const match = /^#\/\$defs\/(.+)$/.exec(schema.$ref);
    const target = match && root.$defs && Object.hasOwn(root.$defs, match[1]) ? root.$defs[match[1]] : undefined;
    if (!target) add(`unresolvable $ref ${schema.$ref}`);
    else merge(validate(target, value, root, pointer));
  }
  if (schema.type !== undefined) {
    const ok = Array.isArray(schema.type) ? schema.type.some((type) => typeMatches(type, value)) : typeMatches(schema.type, value);
    if (!ok) {
      add(`expected ${[].concat(schema.type).join(" or ")}, got ${typeOf(value)}`);
      return errors;
    }
  }
  if (schema.enum && !schema.enum.some((option) => equal(option, value))) add(`must be one of ${JSON.stringify(schema.enum)}`);
  if (schema.const !== undefined && !equal(schema.const, value)) add(`must be ${JSON.stringify(schema.const)}`);
  if (typeof value === "string") {
    const length = schema.minLength !== undefined || schema.maxLength !== undefined ? [...value].length : 0;
    if (schema.minLength !== undefined && length < schema.minLength) add(`shorter than ${schema.minLength} characters`);
    if (schema.maxLength !== undefined && length > schema.maxLength) add(`longer than ${schema.maxLength} characters`);
    if (schema.pattern !== undefined && !patternOf(schema).test(value)) add(`does not match ${schema.pattern}`);
    if (schema.format !== undefined && Object.hasOwn(FORMATS, schema.format) && !FORMATS[schema.format](value)) add(`not a valid ${schema.format}`);
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
    if (schema.items !== undefined) value.forEach((item, i) => merge(validate(schema.items, item, root, `${pointer}/${i}`)));
  }
  if (typeOf(value) === "object") {
    for (const name of schema.required ?? []) if (!Object.hasOwn(value, name)) add("required property is missing", `${pointer}/${escape(name)}`);
    if (schema.properties || schema.additionalProperties !== undefined) {
      for (const name of Object.keys(value)) {
        const at = `${pointer}/${escape(name)}`;
        if (schema.properties && Object.hasOwn(schema.properties, name)) merge(validate(schema.properties[name], value[name], root, at));
        else if (schema.additionalProperties === false) add("property is not allowed", at);
        else if (typeof schema.additionalProperties === "object") merge(validate(schema.additionalProperties, value[name], root, at));
      }
    }
  }
  for (const child of schema.allOf ?? []) merge(validate(child, value, root, pointer));
  if (schema.anyOf && !schema.anyOf.some((child) => validate(child, value, root, pointer).length === 0)) add("matches none of anyOf");
  if (schema.oneOf) {
    const matches = schema.oneOf.filter((child) => validate(child, value, root, pointer).length === 0).length;
    if (matches !== 1) add(`matches ${matches} of oneOf, expected exactly 1`);
  }
  if (schema.not && validate(schema.not, value, root, pointer).length === 0) add("matches the schema under not");
  return errors;
}
