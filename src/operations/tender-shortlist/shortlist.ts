import { approximateEur } from "./eur-rates.ts";
import { COMPETITION_NOTICE_TYPES, searchableText, splitCpvCodes } from "./expert-query.ts";
import { foldText, type NormalizedNotice } from "./normalize.ts";
import type { Tender, TenderShortlistInput, TenderShortlistOutput } from "./schema.ts";
import type { Codec } from "./search-cache.ts";

const DAY_MS = 86_400_000;
export const SHORT_RUNWAY_DAYS = 7;
const LONG_RUNWAY_DAYS = 21;
export const MANY_LOTS = 5;

const COMPETITION = new Set<string>(COMPETITION_NOTICE_TYPES);
const CONTRACT_NOTICES = new Set(["cn-standard", "cn-social", "cn-desg"]);

/** Why a notice was not kept. */
export type DropReason = "not-a-competition" | "deadline-passed" | "below-min-value";

export interface Selection {
  /** Current competition notices, one per procedure, each with its earliest open deadline. */
  candidates: { notice: NormalizedNotice; deadline: Date | null }[];
  dropped: number;
  duplicates: number;
  dropReasons: Map<string, DropReason>;
}

const compareVersions = (a: NormalizedNotice, b: NormalizedNotice) => {
  for (let i = 0; i < a.versionOrder.length; i++) {
    const [x, y] = [a.versionOrder[i] as string | number, b.versionOrder[i] as string | number];
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
};

/** Whether a notice invites tenders: by its notice type, else by its form type; unknown counts as open. */
export function isCompetition(notice: NormalizedNotice): boolean {
  if (notice.noticeType) return COMPETITION.has(notice.noticeType);
  if (notice.formType) return notice.formType === "competition";
  return true;
}

/** The value in euros for comparisons, undefined when unknown or in a currency without a rate. */
const comparableValue = (notice: NormalizedNotice) =>
  notice.value ? approximateEur(notice.value.amount, notice.value.currency) : undefined;

/**
 * Duplicates first (the same publication number twice; then all but the latest version of a procedure,
 * so a procedure whose latest notice is its award is dropped as an award), then the filters: not a
 * competition, every deadline passed, a known value below `minValue`.
 * scanned = candidates + dropped + duplicates.
 */
export function selectCandidates(
  notices: readonly NormalizedNotice[],
  now: Date,
  minValue?: number,
): Selection {
  let duplicates = 0;
  const latest = new Map<string, NormalizedNotice>();
  const seen = new Set<string>();
  for (const notice of notices) {
    if (seen.has(notice.noticeId)) {
      duplicates++;
      continue;
    }
    seen.add(notice.noticeId);
    const kept = latest.get(notice.procedureKey);
    if (kept) duplicates++;
    if (!kept || compareVersions(notice, kept) > 0) latest.set(notice.procedureKey, notice);
  }
  let dropped = 0;
  const dropReasons = new Map<string, DropReason>();
  const drop = (notice: NormalizedNotice, reason: DropReason) => {
    dropped++;
    dropReasons.set(notice.noticeId, reason);
  };
  const candidates: Selection["candidates"] = [];
  for (const notice of latest.values()) {
    if (!isCompetition(notice)) {
      drop(notice, "not-a-competition");
      continue;
    }
    const open = notice.deadlines.filter((deadline) => deadline.getTime() >= now.getTime());
    if (notice.deadlines.length > 0 && open.length === 0) {
      drop(notice, "deadline-passed");
      continue;
    }
    const value = comparableValue(notice);
    if (minValue !== undefined && value !== undefined && value < minValue) {
      drop(notice, "below-min-value");
      continue;
    }
    candidates.push({ notice, deadline: open[0] ?? null });
  }
  return { candidates, dropped, duplicates, dropReasons };
}

const formatAmount = (amount: number, currency: string | null) =>
  `${amount.toLocaleString("en-US", { maximumFractionDigits: 2 })}${currency ? ` ${currency}` : ""}`;

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`;

/**
 * fitScore is the sum of the points in fitReasons (each reason starts with its points), at most 100:
 * title matches 20 (query) + 15 (keywords), CPV 20, country 10, deadline runway 15, value 10, type 10.
 * Risks never change the score; they list what an agent must check before bidding.
 */
export function scoreNotice(
  notice: NormalizedNotice,
  deadline: Date | null,
  input: TenderShortlistInput,
  now: Date,
): Pick<Tender, "fitScore" | "fitReasons" | "risks"> {
  const reasons: [number, string][] = [];
  const risks: string[] = [];
  const titles = notice.titleTexts.map(foldText);
  const inTitle = (term: string) => titles.some((title) => title.includes(term));

  if (input.query) {
    const phrase = foldText(searchableText(input.query));
    const words = phrase.split(" ");
    const found = words.filter(inTitle);
    if (inTitle(phrase)) reasons.push([20, `"${input.query}" appears in the title`]);
    else if (found.length > 0) {
      reasons.push([
        Math.round((15 * found.length) / words.length),
        `${found.length} of ${words.length} query words appear in the title (${found.join(", ")})`,
      ]);
    }
  }
  if (input.keywords?.length) {
    const found = input.keywords.filter((keyword) => inTitle(foldText(searchableText(keyword))));
    if (found.length > 0) {
      reasons.push([
        Math.round((15 * found.length) / input.keywords.length),
        `${found.length} of ${input.keywords.length} keywords appear in the title (${found.join(", ")})`,
      ]);
    }
  }
  if (input.cpvCodes?.length) {
    const { exact, prefixes } = splitCpvCodes(input.cpvCodes);
    const exactMatch = notice.cpvCodes.find((code) => exact.includes(code));
    const prefixMatch = notice.cpvCodes
      .map((code) => [code, prefixes.find((prefix) => code.startsWith(prefix))] as const)
      .find(([, prefix]) => prefix !== undefined);
    if (exactMatch) reasons.push([20, `CPV ${exactMatch} is one of the requested codes`]);
    else if (prefixMatch) {
      reasons.push([12, `CPV ${prefixMatch[0]} falls under the requested prefix ${prefixMatch[1]}`]);
    }
  }
  if (input.countries?.length) {
    const match = notice.buyerCountries.find((country) => input.countries?.includes(country));
    if (match) reasons.push([10, `the buyer is in ${match}, a requested country`]);
  }
  if (deadline) {
    const days = Math.floor((deadline.getTime() - now.getTime()) / DAY_MS);
    const when = deadline.toISOString().replace(".000Z", "Z");
    if (days >= LONG_RUNWAY_DAYS) reasons.push([15, `${days} days until the deadline (${when})`]);
    else if (days >= SHORT_RUNWAY_DAYS) reasons.push([8, `${days} days until the deadline (${when})`]);
    else risks.push(`deadline within ${SHORT_RUNWAY_DAYS} days (${when}): little time to prepare a bid`);
  } else {
    risks.push("no submission deadline in the notice data: read it on the notice page");
  }
  const euros = comparableValue(notice);
  if (notice.value) {
    const amount = formatAmount(notice.value.amount, notice.value.currency);
    reasons.push([5, `estimated value published (${amount})`]);
    if (input.minValue !== undefined && euros !== undefined) {
      reasons.push([
        5,
        `estimated value ${amount} is at least minValue ${formatAmount(input.minValue, "EUR")}`,
      ]);
    } else if (input.minValue !== undefined) {
      risks.push(`value in ${notice.value.currency ?? "an unknown currency"}: minValue could not be checked`);
    }
  } else {
    risks.push(
      input.minValue === undefined
        ? "no estimated value published"
        : "no estimated value published: minValue could not be checked",
    );
  }
  if (notice.noticeType && CONTRACT_NOTICES.has(notice.noticeType)) {
    reasons.push([10, `a contract notice (${notice.noticeType}): an open call for tenders`]);
  } else if (notice.noticeType) {
    reasons.push([5, `a call for competition (${notice.noticeType}) rather than a contract notice`]);
  } else {
    risks.push("notice type not in the search data: check that the notice still invites tenders");
  }
  if (notice.titleLanguage !== "eng") {
    risks.push(
      notice.titleLanguage
        ? `title not in English (${notice.titleLanguage}): the documents are likely in that language`
        : "no title in the notice data",
    );
  }
  if (notice.lotCount !== null && notice.lotCount >= MANY_LOTS) {
    risks.push(`${plural(notice.lotCount, "lot")}: check which lots fit and each lot's conditions`);
  }
  if (notice.frameworkAgreement) {
    risks.push(
      `framework agreement${notice.frameworkAgreement === "title" ? " (named in the title)" : ""}: ` +
        "winning gives a place in the framework, not guaranteed orders",
    );
  }
  if (!notice.buyerName) risks.push("buyer name missing from the notice data");
  if (notice.mixedCurrencies.length > 0) {
    risks.push(
      `values in several currencies (${notice.mixedCurrencies.join(", ")}) are not summed: check each lot`,
    );
  }
  const fitScore = Math.min(
    100,
    reasons.reduce((sum, [points]) => sum + points, 0),
  );
  return { fitScore, fitReasons: reasons.map(([points, text]) => `+${points}: ${text}`), risks };
}

type Ranked = { tender: Tender; deadline: Date | null; euros: number | undefined };

const byNumberDesc = (a: number | undefined, b: number | undefined) =>
  a === b ? 0 : a === undefined ? 1 : b === undefined ? -1 : b - a;
const byDeadline = (a: Date | null, b: Date | null) =>
  a === b ? 0 : a === null ? 1 : b === null ? -1 : a.getTime() - b.getTime();

const ORDER: Record<TenderShortlistInput["rankingMode"], (a: Ranked, b: Ranked) => number> = {
  bestFit: (a, b) => b.tender.fitScore - a.tender.fitScore || byDeadline(a.deadline, b.deadline),
  deadlineSoonest: (a, b) => byDeadline(a.deadline, b.deadline) || b.tender.fitScore - a.tender.fitScore,
  highestValue: (a, b) => byNumberDesc(a.euros, b.euros) || b.tender.fitScore - a.tender.fitScore,
};

/** Ties end on the notice id, so equal inputs always give the same order. */
export function rank(items: Ranked[], mode: TenderShortlistInput["rankingMode"]): Ranked[] {
  return [...items].sort(
    (a, b) =>
      ORDER[mode](a, b) ||
      (a.tender.noticeId < b.tender.noticeId ? -1 : a.tender.noticeId > b.tender.noticeId ? 1 : 0),
  );
}

export function toTender(
  notice: NormalizedNotice,
  deadline: Date | null,
  input: TenderShortlistInput,
  now: Date,
): Tender {
  return {
    noticeId: notice.noticeId,
    title: notice.title ?? `TED notice ${notice.noticeId}`,
    buyerName: notice.buyerName,
    buyerCountry: notice.buyerCountry,
    deadline: deadline ? deadline.toISOString().replace(".000Z", "Z") : null,
    estimatedValue: notice.value?.amount ?? null,
    currency: notice.value?.currency ?? null,
    ...scoreNotice(notice, deadline, input, now),
    sourceUrl: notice.sourceUrl,
    noticeType: notice.noticeType,
    publicationDate: notice.publicationDate,
    cpvCodes: notice.cpvCodes,
    lotCount: notice.lotCount,
    languages: notice.languages,
  };
}

export interface FetchedNotices {
  query: string;
  pages: number;
  notices: NormalizedNotice[];
}

/** Fetched notices as the store keeps them: JSON, with the deadlines revived as dates. */
export const fetchedNoticesCodec: Codec<FetchedNotices> = {
  encode: (fetched) => JSON.stringify(fetched),
  decode: (text) => {
    const fetched = JSON.parse(text) as FetchedNotices;
    for (const notice of fetched.notices) {
      notice.deadlines = (notice.deadlines as unknown as string[]).map((deadline) => new Date(deadline));
    }
    return fetched;
  },
};

/** The answer for one request from the notices fetched for its query (fetched now or cached). */
export function buildShortlist(
  fetched: FetchedNotices,
  input: TenderShortlistInput,
  now: Date,
): TenderShortlistOutput {
  const selection = selectCandidates(fetched.notices, now, input.minValue);
  const ranked = rank(
    selection.candidates.map(({ notice, deadline }) => ({
      tender: toTender(notice, deadline, input, now),
      deadline,
      euros: comparableValue(notice),
    })),
    input.rankingMode,
  ).slice(0, input.maxResults);
  return {
    generatedAt: now.toISOString().replace(/\.\d{3}Z$/, "Z"),
    query: fetched.query,
    count: ranked.length,
    tenders: ranked.map(({ tender }) => tender),
    stats: {
      pages: fetched.pages,
      scanned: fetched.notices.length,
      dropped: selection.dropped,
      duplicates: selection.duplicates,
    },
  };
}
