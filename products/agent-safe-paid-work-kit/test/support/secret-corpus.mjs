// A generated corpus for the secret scan: random values of every secret format it must find, each
// in the places secrets turn up (JSON, YAML, .env, source code, URLs, and the .env file again as
// UTF-16 and as base64), and random values of the formats it must leave alone (digests, commit ids,
// transaction hashes, addresses, UUIDs, base64 images...) in the same places with their usual labels.
// Seeded, so a failing case can be replayed; no dependencies. Every token-shaped string here is
// assembled at run time, so this file holds none.

/** mulberry32: a small seeded generator, good enough to draw test cases. */
export function generator(seed) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const int = (min, max) => min + Math.floor(next() * (max - min + 1));
  const pick = (list) => list[int(0, list.length - 1)];
  const chars = (n, alphabet) => Array.from({ length: n }, () => pick(alphabet)).join("");
  const bytes = (n) => Uint8Array.from({ length: n }, () => int(0, 255));
  return { next, int, pick, chars, bytes };
}

const UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER = "abcdefghijklmnopqrstuvwxyz";
const DIGITS = "0123456789";
const ALNUM = UPPER + LOWER + DIGITS;
const HEX = "0123456789abcdef";
const B64 = `${ALNUM}+/`;
const B64URL = `${ALNUM}_-`;
const BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L";
const p = (...parts) => parts.join(""); // keeps every prefix out of this file's text as one token

const base64url = (text) => Buffer.from(text).toString("base64url");
const hexCase = (r, hex) => (r.next() < 0.2 ? hex.toUpperCase() : hex);
const randomHex = (r, n) => hexCase(r, r.chars(n, HEX));
/** A value of `n` random hex digits that a real key could be (not zero-padded, as a padded address is). */
const keyHex = (r) => {
  const hex = randomHex(r, 64);
  return /^0{8}/.test(hex) ? keyHex(r) : hex;
};
const BIP39 = "abandon ability able about above absent absorb abstract absurd abuse access accident account accuse achieve acid acoustic acquire across act action actor actress actual adapt add addict address adjust admit adult advance advice aerobic affair afford afraid again age agent agree ahead aim air airport aisle alarm album alcohol alert alien all alley allow almost alone alpha already also alter always amateur amazing among amount amused analyst anchor ancient anger angle angry animal ankle announce annual another answer antenna antique anxiety any apart apology appear apple approve april arch arctic area arena argue arm armed armor army around arrange arrest arrive arrow art artefact artist artwork ask aspect assault asset assist assume asthma athlete atom attack attend attitude attract auction audit august aunt author auto autumn average avocado avoid awake aware away awesome awful awkward axis zoo".split(" ");

/**
 * The formats to find: `make(r)` draws one value; `labels` are the names it is stored under;
 * `code` (optional) the ways source code passes it; `contexts` (optional) the places it can be in.
 */
export const SECRET_FORMATS = [
  { name: "GitHub token", labels: ["token", "GITHUB_TOKEN", "gh_token"], make: (r) => p(r.pick(["ghp", "gho", "ghu", "ghs", "ghr"]), "_", r.chars(36, ALNUM)) },
  { name: "GitHub fine-grained token", labels: ["GH_TOKEN", "githubToken"], make: (r) => p("github", "_pat_", r.chars(22, ALNUM), "_", r.chars(59, ALNUM)) },
  { name: "GitLab token", labels: ["GITLAB_TOKEN", "private_token"], make: (r) => p("gl", "pat-", r.chars(20, B64URL)) },
  { name: "OpenAI project key", labels: ["OPENAI_API_KEY", "openaiKey"], make: (r) => p("sk", "-", r.pick(["proj", "svcacct", "admin"]), "-", r.chars(r.int(100, 160), B64URL)) },
  { name: "OpenAI legacy key", labels: ["OPENAI_API_KEY", "apiKey"], make: (r) => p("sk", "-", r.chars(20, ALNUM), "T3Blbk", "FJ", r.chars(20, ALNUM)) },
  { name: "Anthropic API key", labels: ["ANTHROPIC_API_KEY", "anthropicKey"], make: (r) => p("sk", "-ant-", r.pick(["api03", "admin01"]), "-", r.chars(93, B64URL), "AA") },
  { name: "Hugging Face token", labels: ["HF_TOKEN", "hfToken", "HUGGING_FACE_HUB_TOKEN"], make: (r) => p("hf", "_", r.chars(34, UPPER + LOWER)) },
  { name: "npm token", labels: ["NPM_TOKEN", "npmToken", "_authToken"], make: (r) => p("npm", "_", r.chars(36, ALNUM)) },
  { name: "PyPI token", labels: ["PYPI_TOKEN", "password"], make: (r) => p("pypi", "-AgEIcHlwaS5vcmc", r.chars(r.int(60, 160), B64URL)) },
  { name: "Slack bot or user token", labels: ["SLACK_TOKEN", "slackToken"], make: (r) => p("xox", r.pick(["b", "p", "a", "r", "s"]), "-", r.chars(r.int(10, 13), DIGITS), "-", r.chars(r.int(10, 13), DIGITS), "-", r.chars(24, ALNUM)) },
  { name: "Slack app-level token", labels: ["SLACK_APP_TOKEN", "appToken"], make: (r) => p("xa", "pp-", r.int(1, 9), "-A", r.chars(10, UPPER + DIGITS), "-", r.chars(13, DIGITS), "-", r.chars(64, HEX)) },
  { name: "Slack configuration token", labels: ["SLACK_CONFIG_TOKEN"], make: (r) => p("xo", "xe", r.pick([".xoxp", ".xoxb", ""]), "-", r.int(1, 9), "-", r.chars(r.int(146, 166), UPPER + DIGITS)) },
  { name: "Slack webhook", labels: ["SLACK_WEBHOOK_URL", "webhook"], make: (r) => p("https://hooks.", "slack.com/services/T", r.chars(10, UPPER + DIGITS), "/B", r.chars(10, UPPER + DIGITS), "/", r.chars(24, ALNUM)) },
  { name: "Stripe secret key", labels: ["STRIPE_SECRET_KEY", "stripeKey"], make: (r) => p(r.pick(["sk", "rk"]), "_", r.pick(["live", "test"]), "_", r.chars(r.int(24, 99), ALNUM)) },
  { name: "Stripe webhook secret", labels: ["STRIPE_WEBHOOK_SECRET", "endpointSecret", "signing_secret"], make: (r) => p("wh", "sec_", r.chars(32, ALNUM)) },
  { name: "SendGrid API key", labels: ["SENDGRID_API_KEY"], make: (r) => p("SG", ".", r.chars(22, B64URL), ".", r.chars(43, B64URL)) },
  { name: "DigitalOcean token", labels: ["DIGITALOCEAN_TOKEN"], make: (r) => p("do", r.pick(["p", "o", "r"]), "_v1_", r.chars(64, HEX)) },
  { name: "Shopify access token", labels: ["SHOPIFY_ACCESS_TOKEN"], make: (r) => p("sh", r.pick(["pat", "pca", "ppa", "pss"]), "_", r.chars(32, "0123456789abcdefABCDEF")) },
  { name: "Google API key", labels: ["GOOGLE_API_KEY", "key"], make: (r) => p("AI", "za", r.chars(35, B64URL)) },
  { name: "Google OAuth client secret", labels: ["client_secret", "GOOGLE_CLIENT_SECRET"], make: (r) => p("GOC", "SPX-", r.chars(28, B64URL)) },
  { name: "AWS access key ID", labels: ["aws_access_key_id", "AccessKeyId", "AWS_ACCESS_KEY_ID"], make: (r) => p(r.pick(["AK", "AS"]), "IA", r.chars(16, `${UPPER}234567`)) },
  {
    name: "AWS secret access key",
    labels: ["SecretAccessKey", "aws_secret_access_key", "AWS_SECRET_ACCESS_KEY", "secretAccessKey", "aws_secret_key"],
    make: (r) => r.chars(40, B64),
  },
  {
    name: "Azure storage account key",
    labels: ["AZURE_STORAGE_CONNECTION_STRING", "connectionString"],
    make: (r) => `DefaultEndpointsProtocol=https;AccountName=${r.chars(10, LOWER)};AccountKey=${r.chars(86, B64)}==;EndpointSuffix=core.windows.net`,
  },
  { name: "age secret key", labels: ["AGE_KEY", "identity"], make: (r) => p("AGE-SECRET", "-KEY-1", r.chars(58, BECH32)) },
  {
    name: "JSON Web Token",
    labels: ["token", "id_token", "Authorization"],
    make: (r) =>
      [
        base64url(JSON.stringify({ alg: r.pick(["HS256", "RS256", "ES256"]), typ: "JWT" })),
        base64url(JSON.stringify({ sub: r.chars(12, ALNUM), iat: r.int(1.6e9, 1.9e9), scope: "read write" })),
        r.chars(r.int(43, 86), B64URL),
      ].join("."),
  },
  { name: "bearer token", labels: ["Authorization", "authorization"], make: (r) => `Bearer ${r.chars(r.int(24, 64), `${ALNUM}._~-`)}` },
  {
    name: "PEM private key",
    labels: ["private_key", "PRIVATE_KEY_PEM", "sshKey"],
    contexts: ["json", "yaml", "env", "source"],
    make: (r) => {
      const kind = r.pick(["RSA ", "EC ", "OPENSSH ", "ENCRYPTED ", "DSA ", ""]);
      const body = Buffer.from(r.bytes(r.int(120, 600))).toString("base64").match(/.{1,64}/g).join("\n");
      return `-----BEGIN ${kind}${"PRIVATE"} KEY-----\n${body}\n-----END ${kind}PRIVATE KEY-----\n`;
    },
  },
  {
    name: "mnemonic",
    labels: ["mnemonic", "MNEMONIC", "seed phrase", "SEED_PHRASE", "seedPhrase", "recovery_phrase"],
    contexts: ["json", "yaml", "env", "source"],
    code: [(v) => `const account = mnemonicToAccount("${v}");`, (v) => `const wallet = HDNodeWallet.fromPhrase('${v}');`],
    make: (r) => Array.from({ length: r.pick([12, 15, 18, 24]) }, () => r.pick(BIP39)).join(" "),
  },
  {
    // The key this kit protects: 32 random bytes in hex, named as a key or a signer, or passed to a wallet.
    name: "wallet private key (hex)",
    labels: ["PRIVATE_KEY", "privateKey", "private_key", "DEPLOYER", "DEPLOYER_KEY", "deployerPrivateKey", "X402_PRIVATE_KEY", "SIGNER_PK", "signer", "wallet_key", "OWNER_PRIVATE_KEY", "RELAYER_PK", "pk", "secret", "signing key", "wallet"],
    code: [
      (v) => `const wallet = new Wallet("${v}");`,
      (v) => `const wallet = new ethers.Wallet('${v}', provider);`,
      (v) => `const account = privateKeyToAccount("${v}");`,
      (v) => `acct = Account.from_key("${v}")`,
      (v) => `signer := crypto.HexToECDSA("${v}")`,
      (v) => `let signer = LocalWallet::from_str("${v}")?;`,
      (v) => `const key = new SigningKey("${v}");`,
      (v) => `const deployerKey = "${v}";`,
      (v) => `cast send --private-key ${v} $TOKEN "transfer(address,uint256)" $TO 1`,
      (v) => `module.exports = { networks: { base: { url: RPC, accounts: ["${v}"] } } };`,
      (v) => `const signerKey: Hex = "${v}";`,
      (v) => `let wallet: LocalWallet = "${v}".parse()?;`,
      (v) => `wallet = Wallet.from_hex("${v}")`,
    ],
    make: (r) => (r.next() < 0.8 ? "0x" : "") + keyHex(r),
  },
  {
    name: "database URL with a password",
    labels: ["DATABASE_URL", "databaseUrl", "dsn", "REDIS_URL", "MONGO_URI"],
    isUrl: true,
    make: (r) => {
      const scheme = r.pick(["postgres", "postgresql", "mysql", "mariadb", "mongodb", "mongodb+srv", "redis", "rediss", "amqp", "amqps", "mssql", "sqlserver", "clickhouse"]);
      const password = r.chars(r.int(6, 32), `${ALNUM}-._~!*`) + (r.next() < 0.3 ? `%${r.pick(["40", "3A", "2F", "23"])}` : "");
      const host = r.pick(["localhost", "127.0.0.1", "db.internal", `${r.chars(8, LOWER)}.rds.amazonaws.com`, "[::1]"]);
      return `${scheme}://${r.chars(r.int(2, 12), LOWER + DIGITS)}:${password}@${host}${r.next() < 0.7 ? `:${r.int(1000, 65535)}` : ""}/${r.chars(r.int(1, 10), LOWER)}`;
    },
  },
  {
    name: "URL with credentials",
    labels: ["REPO_URL", "remote", "feed"],
    isUrl: true,
    make: (r) => `${r.pick(["https", "http", "ftp", "sftp", "git+https"])}://${r.chars(r.int(2, 12), LOWER)}:${r.chars(r.int(8, 40), ALNUM)}@${r.chars(r.int(3, 10), LOWER)}.example.com/${r.chars(r.int(1, 10), LOWER)}`,
  },
];

/**
 * The formats to leave alone: each value with the labels such values really carry (several of them
 * key-ish: a `cache_key`, a `nonce`, a `deployer` address).
 */
export const LOOKALIKE_FORMATS = [
  { name: "sha256 digest", labels: ["sha256", "digest", "checksum", "hash", "etag", "contentHash", "cache_key", "idempotency_key", "manifestSha256", "keyHash", "keyId", "apiKeyHash", "publicKeyHash"], make: (r) => randomHex(r, 64) },
  { name: "sha512 digest", labels: ["sha512", "digest"], make: (r) => randomHex(r, 128) },
  { name: "md5 digest", labels: ["md5", "etag", "Content-MD5"], make: (r) => randomHex(r, 32) },
  { name: "git commit id", labels: ["commit", "sha", "head_sha", "GITHUB_SHA", "parent", "rev"], make: (r) => r.chars(40, HEX) },
  {
    name: "transaction or block hash",
    labels: ["txHash", "transaction", "transactionHash", "blockHash", "hash", "nonce", "topic", "stateRoot", "salt", "storageKey", "parentHash", "merkleRoot", "requestId", "tx"],
    code: [
      (v) => `const receipt = await client.waitForTransactionReceipt({ hash: "${v}" });`,
      (v) => `const tx = await provider.getTransaction("${v}");`,
      (v) => `const digest = keccak256("${v}");`,
      (v) => `const nonce = BigInt("${v}");`,
      (v) => `const signature = await signer.signMessage("${v}");`,
      (v) => `const signature = await wallet.signMessage({ message: { raw: "${v}" } });`,
      (v) => `Paid by the deployer: ${v}`,
      (v) => `The signer settled it: ${v}`,
      (v) => `cast receipt --rpc-url $RPC ${v}`,
      (v) => `bytes32 public constant MINTER_ROLE = ${v};`,
    ],
    make: (r) => `0x${randomHex(r, 64)}`,
  },
  {
    name: "32-byte address (Aptos, Sui) or role id",
    labels: ["account", "owner", "sender", "AddressOwner", "package", "objectId", "admin", "operator", "MINTER_ROLE", "DEFAULT_ADMIN_ROLE", "PERMIT_TYPEHASH", "DOMAIN_SEPARATOR", "secretHash", "initCodeHash"],
    code: [(v) => `const info = await aptos.getAccountInfo({ accountAddress: "${v}" });`, (v) => `const obj = await client.getObject({ id: "${v}" });`],
    make: (r) => `0x${r.chars(64, HEX)}`,
  },
  { name: "zero-padded address (a log topic)", labels: ["topic1", "owner", "from", "signer", "account"], make: (r) => `0x${"0".repeat(24)}${r.chars(40, HEX)}` },
  {
    name: "public address",
    labels: ["payTo", "address", "from", "to", "owner", "DEPLOYER", "deployer", "signer", "wallet", "account", "asset", "DEPLOYER_ADDRESS"],
    code: [(v) => `const balance = await client.getBalance({ address: "${v}" });`, (v) => `const token = new Contract("${v}", abi, provider);`],
    make: (r) => `0x${r.chars(40, "0123456789abcdefABCDEF")}`,
  },
  {
    // secp256k1 (uncompressed, compressed) and ed25519 (32 bytes, the size of a private key).
    name: "public key",
    labels: ["publicKey", "pubkey", "PUBLIC_KEY", "public key", "Public key", "public_key", "verifyingKey"],
    make: (r) => r.pick([() => `0x04${randomHex(r, 128)}`, () => `0x0${r.pick(["2", "3"])}${randomHex(r, 64)}`, () => keyHex(r)])(),
  },
  { name: "signature", labels: ["signature", "sig", "X-PAYMENT-SIGNATURE"], make: (r) => `0x${randomHex(r, 130)}` },
  { name: "UUID", labels: ["id", "requestId", "idempotency_key", "traceId", "session_id", "key"], make: (r) => [8, 4, 4, 4, 12].map((n) => r.chars(n, HEX)).join("-") },
  {
    name: "base64 image",
    labels: ["logo", "image", "src", "thumbnail"],
    make: (r) => {
      const [mime, header] = r.pick([
        ["png", [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]],
        ["jpeg", [0xff, 0xd8, 0xff, 0xe0]],
        ["gif", [0x47, 0x49, 0x46, 0x38, 0x39, 0x61]],
        ["webp", [0x52, 0x49, 0x46, 0x46]],
      ]);
      return `data:image/${mime};base64,${Buffer.concat([Buffer.from(header), Buffer.from(r.bytes(r.int(64, 3000)))]).toString("base64")}`;
    },
  },
  { name: "subresource integrity", labels: ["integrity"], make: (r) => `sha${r.pick(["256", "384", "512"])}-${Buffer.from(r.bytes(r.pick([32, 48, 64]))).toString("base64")}` },
  { name: "base64 of harmless text", labels: ["content", "note", "readme"], make: (r) => Buffer.from(`# Notes ${r.chars(8, LOWER)}\nThe key to this report is the data: see the transaction hash and the commit.\nkey: value\n`).toString("base64") },
  { name: "AWS documented example keys", labels: ["aws_access_key_id", "aws_secret_access_key"], make: (r) => r.pick(["AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "AKIAI44QH8DHBEXAMPLE", "je7MtGbClwBF/2Zp9Utk/h3yCo8nvbEXAMPLEKEY"]) },
  {
    name: "URL without a password",
    labels: ["DATABASE_URL", "homepage", "repository"],
    isUrl: true,
    make: (r) =>
      r.pick([
        () => `postgres://${r.chars(6, LOWER)}@localhost:5432/${r.chars(5, LOWER)}`,
        () => `postgres://${r.chars(6, LOWER)}:\${PGPASSWORD}@db.internal/${r.chars(5, LOWER)}`,
        () => `mysql://${r.chars(6, LOWER)}:****@db.internal/${r.chars(5, LOWER)}`,
        () => `redis://:<password>@localhost:6379/0`,
        () => `https://${r.chars(6, LOWER)}.example.com:${r.int(1000, 65535)}/a/b?c=d`,
        () => `ssh://git@github.com:22/${r.chars(6, LOWER)}/${r.chars(6, LOWER)}.git`,
        () => `https://github.com/${r.chars(6, LOWER)}/${r.chars(6, LOWER)}/commit/${r.chars(40, HEX)}`,
        () => `https://basescan.org/tx/0x${r.chars(64, HEX)}`,
        () => `mongodb+srv://${r.chars(6, LOWER)}:{{ .Values.mongo.password }}@cluster0.example.net/app`,
        () => `https://user:%s@host.example/`,
      ])(),
  },
  {
    name: "placeholder key",
    labels: ["PRIVATE_KEY", "privateKey", "X402_PRIVATE_KEY", "OPENAI_API_KEY", "token"],
    make: (r) => r.pick(["0x...", "<your private key>", "${PRIVATE_KEY}", "$X402_PRIVATE_KEY", "0xYOUR_PRIVATE_KEY", "changeme", ""]),
  },
  {
    name: "identifier with a token prefix",
    labels: ["name", "env", "script"],
    make: (r) => r.pick(["npm_config_cache", "npm_package_version", "hf_hub_download", "whsec_", "xapp-", "task-management", "risk_live_value", "ghp_short", "sk-ant-", "glpat-", "dop_v1_", "AGE-SECRET-KEY-1", "SG.short.value", "GOCSPX-", "pypi-"]) + (r.next() < 0.5 ? "" : `_${r.chars(r.int(1, 8), LOWER)}`),
  },
];

// ---- where values are put ----------------------------------------------------------------------

const words = (label) => label.replace(/([a-z0-9])([A-Z])/g, "$1 $2").split(/[^A-Za-z0-9]+/).filter(Boolean);
const envName = (label) => words(label).join("_").toUpperCase() || "VALUE";
const camel = (label) => words(label).map((w, i) => (i === 0 ? w.toLowerCase() : w[0].toUpperCase() + w.slice(1).toLowerCase())).join("") || "value";
const yamlValue = (v) => (/^[\w./+=:@-]*$/.test(v) && v !== "" ? v : JSON.stringify(v));
const envValue = (v) => (/^[^\s"'#$\\]*$/.test(v) ? v : JSON.stringify(v));

/** The documents one value is written into: [{ context, text }], several lines each around it. */
export function placements(format, value, r) {
  const label = r.pick(format.labels);
  const json = `{\n  "name": "report-${r.int(1, 99)}",\n  ${JSON.stringify(label)}: ${JSON.stringify(value)},\n  "region": "eu-west-1"\n}\n`;
  const env = `# settings\nNODE_ENV=production\n${r.next() < 0.3 ? "export " : ""}${envName(label)}=${envValue(value)}\nPORT=8080\n`;
  const all = {
    json,
    yaml: `service:\n  name: report\n  ${/\s/.test(label) ? JSON.stringify(label) : label}: ${yamlValue(value)}\n  replicas: 2\n`,
    env,
    source:
      format.code && r.next() < 0.6
        ? `import { x } from "./x.js";\n${r.pick(format.code)(value)}\nexport default x;\n`
        : `import { x } from "./x.js";\nconst ${camel(label)} = ${JSON.stringify(value)};\nexport default x;\n`,
    // A JSON document inside a JSON string (a log line, an API's payload).
    "json in a JSON string": `{"level":"info","payload":${JSON.stringify(json)}}\n`,
    url: format.isUrl ? `Connect with ${value} and retry.\n` : `GET https://api.example.org/v1/report?${camel(label)}=${value}&page=2\n`,
    // The same .env file as another tool may have written it, or as a CI secret stores it.
    "env as UTF-16LE": Buffer.from(`\ufeff${env}`, "utf16le").toString("utf8"),
    "json as UTF-16BE": Buffer.from(`\ufeff${json}`, "utf16le").swap16().toString("utf8"),
    "env as UTF-16LE, no BOM": Buffer.from(env, "utf16le").toString("utf8"),
    // Wrapped as `base64` (76), PEM (64) or `base64 -w` wraps it.
    "env as base64": Buffer.from(env).toString("base64").replace(new RegExp(`.{${r.pick([64, 76, 100, 120])}}`, "g"), "$&\n"),
    "env as base64 in JSON": `{ "envFile": "${Buffer.from(env).toString("base64")}" }\n`,
  };
  const contexts = format.contexts ?? Object.keys(all);
  return Object.entries(all)
    .filter(([context]) => contexts.includes(context) || ((context === "json in a JSON string" ? contexts.includes("json") : !["json", "yaml", "env", "source", "url"].includes(context) && contexts.includes("env"))))
    .map(([context, text]) => ({ context, text }));
}
