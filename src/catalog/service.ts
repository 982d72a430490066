/** How the service introduces itself in every discovery document. */
export const SERVICE = {
  name: "utility402",
  description:
    "Paid machine-readable utilities and downloadable toolkits for autonomous agents: EU tender shortlists, " +
    "CSV/JSON cleanup, research briefs, JSON diff, OpenAPI audit, unit conversion, a humanoid-robot FMEA " +
    "catalogue, clinical-trial results and DEX price snapshots. Every call is paid per call with x402 v2 in USDC " +
    "on Base (eip155:8453); nothing is charged for a call that does not succeed. No accounts, no API keys.",
} as const;

/** Every operation tag with what it groups (tags in the registry must be listed here). */
export const TAG_DESCRIPTIONS: Record<string, string> = {
  tenders: "EU public procurement notices from TED.",
  data: "Data cleanup and comparison utilities.",
  research: "Asynchronous research briefs and their jobs.",
  api: "Audits of API contracts.",
  engineering: "Engineering references: units and failure modes.",
  health: "Clinical-trial results.",
  chain: "On-chain market data on Base.",
  products: "Downloadable ZIP toolkits and datasets.",
};
