// Secrets that must never travel inside a deliverable, by the formats their issuers use (the same
// shapes gitleaks and GitHub secret scanning look for). A 32-byte hex string is a private key only
// where it is labelled as one: transaction hashes, block hashes and digests have the same shape.
// No dependencies.

const HEX64 = "(?:0x)?[0-9a-fA-F]{64}";
// A label that says it is a key: "private key", PRIVATE_KEY, X402_SETTLER_PRIVATE_KEY, signerKey,
// "wallet-key", or the bare words key, pk, privkey, secret; not cache_key, txHash or sha256.
// (No nested quantifiers: the scan stays linear on long text.)
const KEY_LABEL = String.raw`(?:(?:private|priv|secret|signing|signer|wallet|account|api|eth|evm)[_ -]?key|(?<![A-Za-z0-9_-])(?:key|pk|privkey|secret))`;

/** [name, RegExp (global), optional check(match, text) → boolean]. */
export const SECRET_RULES = [
  ["PEM private key", /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g],
  ["GitHub token", /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b/g],
  ["GitHub fine-grained token", /\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b/g],
  ["Anthropic API key", /\bsk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_-]{80,}/g],
  ["OpenAI API key", /\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20})T3BlbkFJ[A-Za-z0-9_-]{20,}/g],
  ["OpenAI project key", /\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}/g],
  ["Slack token", /\bxox[baprs]-(?:[0-9]+-){1,3}[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*/g],
  ["Slack webhook", /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9+/]{20,}/g],
  ["Stripe secret key", /\b(?:sk|rk)_(?:live|prod|test)_[A-Za-z0-9]{20,}\b/g],
  ["Google API key", /\bAIza[0-9A-Za-z_-]{35}\b/g],
  ["AWS access key", /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/g, (match) => !/EXAMPLE$/.test(match)],
  [
    "AWS secret access key",
    /\baws_?secret_?(?:access_?)?key(?:_id)?["']?\s*[:=]\s*["']?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/gi,
    (match) => !/EXAMPLEKEY/.test(match),
  ],
  ["bearer token", /\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*/g],
  ["JSON Web Token", /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g],
  ["mnemonic", /\b(?:seed phrase|mnemonic|recovery phrase)\s*["']?\s*[:=]\s*["']?[a-z]+(?:\s+[a-z]+){11,23}\b/gi],
  ["hex private key", new RegExp(`${KEY_LABEL}["']?\\s*[:=]\\s*["']?${HEX64}\\b`, "gi")],
];

const redact = (text) => (text.length <= 12 ? `${text.slice(0, 4)}…` : `${text.slice(0, 8)}…${text.slice(-4)}`);

/**
 * Finds secrets in `text`: [{ rule, line, excerpt }] (the excerpt redacted). An AWS access key ID
 * with a secret access key in the same text is reported once more as "AWS key pair".
 */
export function scanSecrets(text) {
  const findings = [];
  const lineOf = (index) => text.slice(0, index).split("\n").length;
  for (const [rule, pattern, check] of SECRET_RULES) {
    pattern.lastIndex = 0;
    for (const match of text.matchAll(pattern)) {
      if (check && !check(match[0], text)) continue;
      findings.push({ rule, line: lineOf(match.index), excerpt: redact(match[0].trim()) });
    }
  }
  if (findings.some((f) => f.rule === "AWS access key") && findings.some((f) => f.rule === "AWS secret access key")) {
    findings.push({ rule: "AWS key pair", line: findings.find((f) => f.rule === "AWS access key").line, excerpt: "access key ID and secret access key together" });
  }
  return findings;
}
