import { type ContractDocument, isPlainObject } from "./contract.ts";
import { childPointer as child, fragmentTokens } from "./pointer.ts";

/**
 * Checks that matter to an agent that reads a contract to call (and pay for) an API, on top of
 * Redocly's rules. They read only the contract itself: local `#/...` references are followed,
 * external ones are not (the audit reports those as no-external-refs).
 */
export const AGENT_RULES = {
  "agent-operation-id": {
    recommended: "warning",
    meaning: "an operation has no operationId (agents and client generators name the call after it)",
  },
  "agent-4xx-response": {
    recommended: "warning",
    meaning: "an operation documents no 4xx response (`default` does not count)",
  },
  "agent-examples": {
    recommended: "info",
    meaning:
      "a request body, or a 2xx response with content, has no example (media-type example/examples or a schema example)",
  },
  "agent-payment-instructions": {
    recommended: "error",
    meaning:
      "a paid operation (it declares a 402 response) does not say how to pay: no x-payment-info, no payment " +
      "security scheme (apiKey in header PAYMENT-SIGNATURE or X-PAYMENT), no described PAYMENT-REQUIRED header on the 402. " +
      "An error only where the API declares x402 somewhere (any of those, or an x-x402 extension); elsewhere a 402 " +
      'may be a business refusal (Rebilly\'s "Contact cannot be deleted") and the finding is a note (info) in both rulesets',
  },
  "agent-payment-402": {
    recommended: "warning",
    meaning:
      "an operation says it is paid (x-payment-info or a payment security scheme) but documents no 402 response",
  },
} as const satisfies Record<string, { recommended: "error" | "warning" | "info"; meaning: string }>;

export type AgentRuleId = keyof typeof AGENT_RULES;

export interface AgentFinding {
  ruleId: AgentRuleId;
  message: string;
  pointer: string;
  /** Set when the finding is a note whatever the ruleset (a 402 in an API that does not declare x402). */
  severity?: "info";
}

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace", "query"] as const;
const PAYMENT_HEADERS = new Set(["payment-signature", "x-payment"]);
const MAX_REF_HOPS = 32;

interface Located {
  node: unknown;
  pointer: string;
}

/** Follows local references (`#/...`) from a node; undefined for an external, missing or circular one. */
export function resolveLocal(
  document: ContractDocument,
  node: unknown,
  pointer: string,
): Located | undefined {
  return follow(document, { node, pointer }, { hopsLeft: MAX_REF_HOPS });
}

/** The budget is shared by every hop of one resolution, references met inside pointers included. */
function follow(
  document: ContractDocument,
  start: Located,
  budget: { hopsLeft: number },
): Located | undefined {
  let current = start;
  while (isPlainObject(current.node) && typeof current.node.$ref === "string") {
    const ref = current.node.$ref;
    if (budget.hopsLeft-- <= 0 || !ref.startsWith("#")) return undefined;
    const target = locate(document, ref.slice(1), budget);
    if (!target) return undefined;
    current = target;
  }
  return current;
}

/** A URI-fragment JSON Pointer ("/components/schemas/Pet") into the document, through any references. */
function locate(
  document: ContractDocument,
  fragment: string,
  budget: { hopsLeft: number },
): Located | undefined {
  const tokens = fragmentTokens(fragment);
  if (!tokens) return undefined;
  let current: Located | undefined = { node: document, pointer: "" };
  for (const token of tokens) {
    current = follow(document, current, budget);
    if (!current) return undefined;
    const { node } = current;
    if (Array.isArray(node) && /^\d+$/.test(token) && Number(token) < node.length) {
      current = { node: node[Number(token)], pointer: child(current.pointer, token) };
    } else if (isPlainObject(node) && Object.hasOwn(node, token)) {
      current = { node: node[token], pointer: child(current.pointer, token) };
    } else {
      return undefined;
    }
  }
  return current;
}

const hasOwnValue = (node: Record<string, unknown>, key: string) =>
  Object.hasOwn(node, key) && node[key] !== undefined;

function mediaTypeHasExample(document: ContractDocument, mediaType: unknown, pointer: string): boolean {
  if (!isPlainObject(mediaType)) return false;
  if (hasOwnValue(mediaType, "example")) return true;
  if (isPlainObject(mediaType.examples) && Object.keys(mediaType.examples).length > 0) return true;
  const schema = resolveLocal(document, mediaType.schema, child(pointer, "schema"))?.node;
  if (!isPlainObject(schema)) return false;
  return hasOwnValue(schema, "example") || (Array.isArray(schema.examples) && schema.examples.length > 0);
}

/** Whether a body (request body or response) with content shows an example; true when it has no content. */
function contentHasExample(document: ContractDocument, body: Located): boolean {
  if (!isPlainObject(body.node) || !isPlainObject(body.node.content)) return true;
  const content = body.node.content;
  const types = Object.keys(content);
  if (types.length === 0) return true;
  const at = child(body.pointer, "content");
  return types.some((type) => mediaTypeHasExample(document, content[type], child(at, type)));
}

const isPaymentScheme = (scheme: unknown) =>
  isPlainObject(scheme) &&
  scheme.type === "apiKey" &&
  scheme.in === "header" &&
  typeof scheme.name === "string" &&
  PAYMENT_HEADERS.has(scheme.name.toLowerCase());

/** The operation's security (or the document's) names a payment scheme: apiKey in a payment header. */
function paymentSchemeApplies(document: ContractDocument, operation: Record<string, unknown>): boolean {
  const security = Array.isArray(operation.security)
    ? operation.security
    : Array.isArray(document.security)
      ? document.security
      : [];
  const components = isPlainObject(document.components) ? document.components : {};
  const schemes = isPlainObject(components.securitySchemes) ? components.securitySchemes : {};
  return security.some(
    (requirement) =>
      isPlainObject(requirement) &&
      Object.keys(requirement).some(
        (name) =>
          Object.hasOwn(schemes, name) &&
          isPaymentScheme(
            resolveLocal(document, schemes[name], child("/components/securitySchemes", name))?.node,
          ),
      ),
  );
}

/** The 402 response documents the PAYMENT-REQUIRED header (any letter case) with a description. */
function describesPaymentRequiredHeader(document: ContractDocument, response: Located | undefined): boolean {
  if (!response || !isPlainObject(response.node) || !isPlainObject(response.node.headers)) return false;
  const headers = response.node.headers;
  return Object.keys(headers).some((name) => {
    if (name.toLowerCase() !== "payment-required") return false;
    const header = resolveLocal(
      document,
      headers[name],
      child(child(response.pointer, "headers"), name),
    )?.node;
    return (
      isPlainObject(header) && typeof header.description === "string" && header.description.trim() !== ""
    );
  });
}

interface LocatedOperation {
  operation: Record<string, unknown>;
  pointer: string;
  label: string;
}

/** Operations under `paths` (webhooks are called by the API, not by agents); `query` is OpenAPI 3.2's. */
function operationsOf(document: ContractDocument): LocatedOperation[] {
  const operations: LocatedOperation[] = [];
  const paths = document.paths;
  if (!isPlainObject(paths)) return operations;
  for (const path of Object.keys(paths)) {
    const item = resolveLocal(document, paths[path], child("/paths", path));
    if (!item || !isPlainObject(item.node)) continue;
    for (const method of METHODS) {
      const operation = item.node[method];
      if (!isPlainObject(operation)) continue;
      operations.push({
        operation,
        pointer: child(item.pointer, method),
        label: `${method.toUpperCase()} ${path}`,
      });
    }
  }
  return operations;
}

/**
 * Whether the API says anywhere that it takes x402 payments: an x-x402 extension (root or info), an
 * operation with x-payment-info, a payment security scheme, or a 402 response that describes the
 * PAYMENT-REQUIRED header. Only then is a 402 without payment instructions an error.
 */
export function declaresX402(document: ContractDocument, operations = operationsOf(document)): boolean {
  if (Object.hasOwn(document, "x-x402")) return true;
  if (isPlainObject(document.info) && Object.hasOwn(document.info, "x-x402")) return true;
  const components = isPlainObject(document.components) ? document.components : {};
  const schemes = isPlainObject(components.securitySchemes) ? components.securitySchemes : {};
  for (const name of Object.keys(schemes)) {
    const scheme = resolveLocal(document, schemes[name], child("/components/securitySchemes", name))?.node;
    if (isPaymentScheme(scheme)) return true;
  }
  for (const { operation, pointer } of operations) {
    if (isPlainObject(operation["x-payment-info"])) return true;
    const responses = isPlainObject(operation.responses) ? operation.responses : {};
    if (!Object.hasOwn(responses, "402")) continue;
    const at = child(child(pointer, "responses"), "402");
    if (describesPaymentRequiredHeader(document, resolveLocal(document, responses["402"], at))) return true;
  }
  return false;
}

/** Runs every agent rule over the operations under `paths`. */
export function agentFindings(document: ContractDocument): AgentFinding[] {
  const findings: AgentFinding[] = [];
  const operations = operationsOf(document);
  const x402 = declaresX402(document, operations);
  for (const { operation, pointer, label } of operations) {
    checkOperation(document, operation, pointer, label, x402, findings);
  }
  return findings;
}

function checkOperation(
  document: ContractDocument,
  operation: Record<string, unknown>,
  at: string,
  label: string,
  x402: boolean,
  findings: AgentFinding[],
): void {
  const report = (ruleId: AgentRuleId, pointer: string, message: string, note?: boolean) =>
    findings.push({ ruleId, pointer, message, ...(note ? { severity: "info" as const } : {}) });
  const responses = isPlainObject(operation.responses) ? operation.responses : undefined;
  const codes = responses ? Object.keys(responses) : [];
  const responsesAt = responses ? child(at, "responses") : at;

  if (typeof operation.operationId !== "string" || operation.operationId.trim() === "") {
    report(
      "agent-operation-id",
      at,
      `${label} has no operationId: agents and client generators name the call after it`,
    );
  }

  if (!codes.some((code) => /^4[0-9X]{2}$/i.test(code))) {
    report(
      "agent-4xx-response",
      responsesAt,
      `${label} documents no 4xx response: an agent cannot tell a request it must fix ` +
        "(bad input, authentication, payment) from a failure of the server",
    );
  }

  if (operation.requestBody !== undefined) {
    const body = resolveLocal(document, operation.requestBody, child(at, "requestBody"));
    if (body && !contentHasExample(document, body)) {
      report(
        "agent-examples",
        child(at, "requestBody"),
        `${label}: the request body has no example (example or examples on a media type, or an example on its schema)`,
      );
    }
  }
  for (const code of codes.filter((code) => /^2[0-9X]{2}$/i.test(code))) {
    const responseAt = child(responsesAt, code);
    const response = resolveLocal(document, (responses as Record<string, unknown>)[code], responseAt);
    if (response && !contentHasExample(document, response)) {
      report(
        "agent-examples",
        responseAt,
        `${label}: response ${code} has no example (example or examples on a media type, or an example on its schema)`,
      );
    }
  }

  const declares402 = codes.includes("402");
  const hasPaymentInfo = isPlainObject(operation["x-payment-info"]);
  const paymentScheme = paymentSchemeApplies(document, operation);
  if (declares402) {
    const responseAt = child(responsesAt, "402");
    const response = resolveLocal(document, (responses as Record<string, unknown>)["402"], responseAt);
    if (!hasPaymentInfo && !paymentScheme && !describesPaymentRequiredHeader(document, response)) {
      const howToPay =
        "an x-payment-info object (price, network, asset, payTo), a payment security scheme (apiKey in header " +
        "PAYMENT-SIGNATURE or X-PAYMENT), or a described PAYMENT-REQUIRED header on the 402 response";
      if (x402) {
        report(
          "agent-payment-instructions",
          responseAt,
          `${label} answers 402 Payment Required but does not say how to pay: add ${howToPay}`,
        );
      } else {
        report(
          "agent-payment-instructions",
          responseAt,
          `note: ${label} answers 402 but the API does not declare x402 anywhere, so this 402 is read as the ` +
            `API's own refusal, not a payment challenge; if it is one, add ${howToPay}`,
          true,
        );
      }
    }
  } else if (hasPaymentInfo || paymentScheme) {
    report(
      "agent-payment-402",
      responsesAt,
      `${label} says it is paid (${hasPaymentInfo ? "x-payment-info" : "a payment security scheme"}) but ` +
        "documents no 402 response: an agent needs the shape of the payment challenge",
    );
  }
}
