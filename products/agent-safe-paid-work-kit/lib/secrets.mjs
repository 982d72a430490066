// Secrets that must never travel inside a deliverable, by the formats their issuers use (the same
// shapes gitleaks and GitHub secret scanning look for). A 32-byte hex string is a private key only
// where its context says so (a key-ish name, or a wallet it is passed to): transaction hashes,
// nonces and digests have the same shape. Text that is UTF-16 and text that is base64 of text (a
// `base64 .env`, a CI secret) are scanned as the text they hold. No dependencies; every pattern
// stays linear on long text (bounded repetitions, no nested quantifiers).

/** 32 bytes in hex, alone (not part of a longer hex string or a name). */
const HEX64 = /(?<![\w$])(?:0x)?([0-9a-fA-F]{64})(?![\w$])/g;
// A quote, escaped or not (JSON inside a JSON string).
const OPEN_QUOTE = "\\\\?[\"'`]?";

// ---- is a name key-ish? ---------------------------------------------------------------------------

/** Words that make a name hold a key when it is 32 bytes of hex, wherever they stand. */
const KEY_WORDS = new Set("key keys pk sk privkey privatekey private priv secret secrets seed mnemonic ecdsa keypair".split(" "));
/**
 * Names of the roles a key plays, key-ish as the name of a setting or a variable (`DEPLOYER=0x…`,
 * `signer: 0x…`, Hardhat's `accounts: ["0x…"]`) but not in prose ("paid by the deployer: 0x…" is a
 * transaction). Not `account`, `owner` or `admin`: Aptos and Sui addresses, and role ids, are 32 bytes too.
 */
const ROLE_WORDS = new Set("signer signers signing wallet wallets accounts deployer relayer".split(" "));
/** Words that make it something else, whatever else the name says (a key's hash, a public key, a nonce). */
const NOT_KEY_WORDS = new Set(
  "hash hashes digest sha sha1 sha256 sha512 md5 keccak keccak256 checksum nonce salt tx txn txid transaction transactions block root merkle leaf proof cache idempotency etag topic topics slot storage id ids uuid address addr public pub pubkey commit signature sig receipt code event log request trace parent state fingerprint kid role verifying verification verify".split(" "),
);
/** Words that declare a variable rather than say something (`export DEPLOYER=…`, `const pk =`). */
const DECLARATION_WORDS = new Set("export const let var set readonly declare local static final val".split(" "));
/** The words of a name: `X402_SETTLER_PRIVATE_KEY`, `deployerPrivateKey`, `wallet.private-key`. */
const nameWords = (name) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, "$1 $2")
    .replace(/([A-Z]+)([A-Z][a-z])/g, "$1 $2")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);
/** Whether a label (`prose` words before a `name`) says key. */
function keyish(name, prose = "") {
  const words = nameWords(name);
  const before = nameWords(prose).filter((w) => !DECLARATION_WORDS.has(w));
  const all = [...before, ...words];
  if (all.some((w) => NOT_KEY_WORDS.has(w))) return false;
  return all.some((w) => KEY_WORDS.has(w)) || (before.length === 0 && words.some((w) => ROLE_WORDS.has(w)));
}
/** Constructors say little by their own name (`LocalWallet::from_str`): the type before them does. */
const GENERIC_CALL = /^(?:from|from_?str|from_?hex|new|parse|create|init|of|decode|load)$/i;
/** 32 bytes a random key could be: not a zero-padded address or number (a log topic, a slot). */
const randomLooking = (hex) => !/^0{16}/.test(hex) && !/^(.)\1+$/.test(hex);

// ---- the rules --------------------------------------------------------------------------------------

// A label, possibly two words of prose before it ("export DEPLOYER", "the signing key"), then `=`, `:`,
// `:=`, `=>` (a type annotation allowed: `const pk: Hex =`), possibly a list's `[`, then the value.
const LABEL = String.raw`(?<![\w$.-])((?:[A-Za-z]{1,20} ){0,2})(-{0,2}[A-Za-z_$][\w$.-]{0,63})`;
const ASSIGN = String.raw`\\?["'\]]?\s*(?::\s*[\w.$<>\`{}]{1,40}\s*=|:=|=>|[:=])\s*\[?\s*${OPEN_QUOTE}`;
// A call: new Wallet("0x…"), privateKeyToAccount('0x…'), Account.from_key("…"), LocalWallet::from_str(…).
const CALL = String.raw`(?<![\w$.:])((?:[A-Za-z_$][\w$]{0,40}(?:\.|::)){0,3}[A-Za-z_$][\w$]{0,40})\s*\(\s*${OPEN_QUOTE}`;
// A command-line flag: cast send --private-key 0x…
const FLAG = String.raw`(?<![\w-])(--?[A-Za-z][\w-]{0,40})(?:\s+|=)${OPEN_QUOTE}`;

const BEFORE_LABELLED = new RegExp(`${LABEL}${ASSIGN}$`);
const BEFORE_CALL = new RegExp(`${CALL}$`);
const BEFORE_FLAG = new RegExp(`${FLAG}$`);
/** What may stand between a separator and its value: spaces, a quote, a list's bracket. */
const OPENING = new Set([" ", "\t", "\r", "\n", '"', "'", "`", "[", "\\"]);
/** The most a label, a call or a flag with its separator spans before the value. */
const CONTEXT = 200;

/** Whether 32 bytes of hex at `index` of `text` is a key: by what stands right before it. */
function isHexKey(hex, text, index) {
  if (!randomLooking(hex)) return false;
  // Most hex in a text is a hash in prose or in a list: the last sign before it rules that out cheaply.
  let at = index - 1;
  while (at >= 0 && OPENING.has(text[at])) at--;
  const sign = text[at];
  // A separator (`=`, `:`, `=>`, a call's `(`), or the name of a flag a space before (`--pk 0x…`).
  if (sign === undefined || !(/[=:>(]/.test(sign) || (/[\w-]/.test(sign) && at < index - 1))) return false;
  const before = text.slice(Math.max(0, index - CONTEXT), index);
  if (sign === "(") {
    const call = BEFORE_CALL.exec(before);
    if (!call) return false;
    const parts = call[1].split(/\.|::/);
    const last = parts.at(-1);
    return keyish(GENERIC_CALL.test(last) && parts.length > 1 ? parts.at(-2) : last);
  }
  const labelled = "=:>".includes(sign) ? BEFORE_LABELLED.exec(before) : null;
  if (labelled) return keyish(labelled[2], labelled[1]);
  const flag = before.includes("-") ? BEFORE_FLAG.exec(before) : null;
  return flag ? keyish(flag[1]) : false;
}

/** A password that stands for one (a variable, a template, a mask), not a password. */
const PLACEHOLDER = /^(?:\$\{?[\w.-]+\}?|\{\{.*\}\}|<[^>]*>|%s|%\(\w+\)s|\*+|x+|\.\.\.|password|passwd|pass|secret|changeme)$/i;

/**
 * [name, RegExp (global), optional check(matchText, text, match) → boolean]. A check gets the
 * whole match as a third argument for the rules that need its groups.
 */
export const SECRET_RULES = [
  ["PEM private key", /-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----/g],
  ["GitHub token", /\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36}\b/g],
  ["GitHub fine-grained token", /\bgithub_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}\b/g],
  ["GitLab token", /\bgl(?:pat|dt|rt|ptt|soat|cbt)-[A-Za-z0-9_-]{20,}/g],
  ["Anthropic API key", /\bsk-ant-(?:api|admin|sid)\d{2}-[A-Za-z0-9_-]{80,}/g],
  ["OpenAI API key", /\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20})T3BlbkFJ[A-Za-z0-9_-]{20,}/g],
  ["OpenAI project key", /\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}/g],
  ["Hugging Face token", /\b(?:hf|api_org)_[A-Za-z0-9]{34,}\b/g],
  ["npm token", /\bnpm_[A-Za-z0-9]{36}\b/g],
  ["PyPI token", /\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}/g],
  ["Slack token", /\bxox[baprs]-(?:[0-9]+-){1,3}[0-9A-Za-z]{8,}(?:-[0-9A-Za-z]+)*/g],
  ["Slack app-level token", /\bxapp-\d+-[A-Za-z0-9]{6,}-\d{6,}-[A-Za-z0-9]{32,}/g],
  ["Slack configuration token", /\bxoxe(?:\.xox[bp])?-\d-[A-Za-z0-9]{100,}/g],
  ["Slack webhook", /https:\/\/hooks\.slack\.com\/(?:services|workflows)\/[A-Za-z0-9+/]{20,}/g],
  ["Stripe secret key", /\b(?:sk|rk)_(?:live|prod|test)_[A-Za-z0-9]{20,}\b/g],
  ["Stripe webhook secret", /\bwhsec_[A-Za-z0-9+/=]{24,}/g],
  ["SendGrid API key", /\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}(?![A-Za-z0-9_-])/g],
  ["DigitalOcean token", /\bdo[opr]_v1_[a-f0-9]{64}\b/g],
  ["Shopify access token", /\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b/g],
  ["Google API key", /\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])/g],
  ["Google OAuth client secret", /\bGOCSPX-[A-Za-z0-9_-]{28}(?![A-Za-z0-9_-])/g],
  ["AWS access key", /\b(?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b/g, (found) => !/EXAMPLE$/.test(found)],
  [
    "AWS secret access key",
    // aws_secret_access_key = …, AWS_SECRET_ACCESS_KEY=…, "SecretAccessKey": "…" (the AWS CLI's JSON), secretAccessKey: '…'
    /(?:(?:aws_?)?secret_?access_?key|aws_?secret_?key)\\?["']?\s*(?:[:=]|=>)\s*\\?["'`]?[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+])/gi,
    (found) => !/EXAMPLEKEY/.test(found),
  ],
  ["Azure storage or service bus key", /\b(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/]{40,}={0,2}/g],
  ["age secret key", /\bAGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}\b/g],
  ["bearer token", /\bBearer\s+[A-Za-z0-9._~+/-]{20,}=*/g],
  ["JSON Web Token", /\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}/g],
  [
    "mnemonic",
    /(?:(?:secret[ _-]?)?recovery[ _-]?phrase|seed[ _-]?(?:phrase|words)|mnemonic)\\?["']?\s*(?:[:=]|:=|=>)\s*\\?["'`]?[a-z]+(?:\s+[a-z]+){11,23}\b|\b(?:mnemonicToAccount|fromPhrase|fromMnemonic|from_mnemonic|mnemonicToSeed(?:Sync)?)\s*\(\s*["'`][a-z]+(?:\s+[a-z]+){11,23}\b/gi,
  ],
  ["password in a URL", /\b[A-Za-z][A-Za-z0-9+.-]{1,20}:\/\/[^\s:@/?#"'<>\\]{0,64}:([^\s@/?#"'<>\\]{1,128})@[^\s/?#"'<>\\@]/g, (_found, _text, match) => !PLACEHOLDER.test(decodeURIComponentSafe(match[1]))],
  ["hex private key", HEX64, (_found, text, match) => isHexKey(match[1], text, match.index)],
];

function decodeURIComponentSafe(text) {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}

// ---- what is scanned: the text, its UTF-16 recovered, and the text inside base64 --------------------

/**
 * A run of base64 (or base64url); a wrapped block's lines (40 characters or more each, as `base64`,
 * PEM and `base64 -w` write them, indented or not) joined, up to a line that is not base64.
 */
const BASE64_RUN = /(?<![A-Za-z0-9+/_-])(?:(?:[A-Za-z0-9+/]{40,}\r?\n[ \t]*)+[A-Za-z0-9+/]*={0,2}(?![A-Za-z0-9+/=_-])|[A-Za-z0-9+/_-]{24,}={0,2})/g;
/** How deep base64 inside base64 is followed. */
const MAX_DEPTH = 2;

/** The text base64 decodes to, or undefined when it is not text (an image, a digest, random bytes). */
function decodedText(run) {
  const bytes = Buffer.from(run.replace(/\s+/g, ""), "base64");
  if (bytes.length < 16) return undefined;
  const text = asText(bytes);
  let odd = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f || c === 0xfffd) odd++;
  }
  return odd <= text.length * 0.02 ? text : undefined;
}

/** Bytes as text: UTF-16 by its byte-order mark, else UTF-8 (a NUL-interleaved UTF-16 without a mark is undone by `readable`). */
function asText(bytes) {
  const buffer = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (buffer[0] === 0xff && buffer[1] === 0xfe) return readable(buffer.subarray(2).toString("utf16le"));
  if (buffer[0] === 0xfe && buffer[1] === 0xff) return readable(Buffer.from(buffer.subarray(2)).swap16().toString("utf16le"));
  return readable(buffer.toString("utf8"));
}

/**
 * Text read as UTF-8 although it was UTF-16 (or UTF-32) holds its ASCII with NULs between the
 * characters: without them the secrets read again, on the same lines.
 */
const readable = (text) => (text.includes("\0") ? text.replaceAll("\0", "") : text);

const redact = (text) => (text.length <= 12 ? `${text.slice(0, 4)}…` : `${text.slice(0, 8)}…${text.slice(-4)}`);

/** line(index): the 1-based line of a position, by binary search over the line starts. */
function lineIndex(text) {
  const starts = [0];
  for (let i = text.indexOf("\n"); i >= 0; i = text.indexOf("\n", i + 1)) starts.push(i + 1);
  return (index) => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = (low + high + 1) >> 1;
      if (starts[mid] <= index) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
}

function scanText(text, depth) {
  const findings = [];
  const lineOf = lineIndex(text);
  for (const [rule, pattern, check] of SECRET_RULES) {
    pattern.lastIndex = 0;
    for (const match of text.matchAll(pattern)) {
      if (check && !check(match[0], text, match)) continue;
      findings.push({ rule, line: lineOf(match.index), excerpt: redact(match[0].trim()) });
    }
  }
  if (depth < MAX_DEPTH) {
    for (const match of text.matchAll(BASE64_RUN)) {
      const inner = decodedText(match[0]);
      if (inner === undefined) continue;
      for (const finding of scanText(inner, depth + 1)) {
        findings.push({ ...finding, rule: finding.rule.endsWith("(base64-encoded)") ? finding.rule : `${finding.rule} (base64-encoded)`, line: lineOf(match.index) });
      }
    }
  }
  return findings;
}

/**
 * Finds secrets in `input` (text, or the bytes of a file: UTF-8, or UTF-16 with a byte-order
 * mark): [{ rule, line, excerpt }] (the excerpt redacted). A secret found inside base64 is
 * reported on the line of the base64, its rule marked "(base64-encoded)". An AWS access key ID with
 * a secret access key in the same text is reported once more as "AWS key pair".
 */
export function scanSecrets(input) {
  const findings = scanText(typeof input === "string" ? readable(input) : asText(input), 0);
  const id = findings.find((f) => f.rule.startsWith("AWS access key"));
  if (id && findings.some((f) => f.rule.startsWith("AWS secret access key"))) {
    findings.push({ rule: "AWS key pair", line: id.line, excerpt: "access key ID and secret access key together" });
  }
  return findings;
}
