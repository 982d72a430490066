import { approximateEur } from "./eur-rates.ts";
import { COMPETITION_NOTICE_TYPES, searchableText, splitCpvCodes } from "./expert-query.ts";
import { foldText, type NormalizedNotice, type NoticeDeadline } from "./normalize.ts";
import type { Tender, TenderShortlistInput, TenderShortlistOutput } from "./schema.ts";
import type { Codec } from "./search-cache.ts";

const DAY_MS = 86_400_000;
export const SHORT_RUNWAY_DAYS = 7;
const LONG_RUNWAY_DAYS = 21;
export const MANY_LOTS = 5;

const isoInstant = (date: Date) => date.toISOString().replace(".000Z", "Z");

const unique = <T>(values: readonly T[]) => [...new Set(values)];

/**
 * The words of a text, compared without accents and case: maximal runs of Unicode letters and digits
 * ("AI-based" → ai, based; "países" → paises), so a term matches whole words only, never inside one.
 */
export const words = (text: string) => foldText(text).match(/[\p{L}\p{N}]+/gu) ?? [];

/** Whether `term`'s words occur consecutively in `text`'s words. */
export function containsWords(text: readonly string[], term: readonly string[]): boolean {
  if (term.length === 0) return false;
  for (let start = 0; start + term.length <= text.length; start++) {
    if (term.every((word, offset) => text[start + offset] === word)) return true;
  }
  return false;
}

const COMPETITION = new Set<string>(COMPETITION_NOTICE_TYPES);
const CONTRACT_NOTICES = new Set(["cn-standard", "cn-social", "cn-desg"]);

/** Why a notice was not kept. */
export type DropReason = "not-a-competition" | "deadline-passed" | "below-min-value";

export interface Selection {
  /** Current competition notices, one per procedure, each with its earliest open deadline (of any kind). */
  candidates: { notice: NormalizedNotice; deadline: NoticeDeadline | null }[];
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
    const open = notice.deadlines.filter((deadline) => deadline.at.getTime() >= now.getTime());
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
 * query 20 (as whole words in the buyer's own title; 12 in its descriptions; 10 × the share of its words),
 * keywords 15, CPV 20, country 10, deadline runway 15 (the earliest open deadline of any kind), value 10,
 * type 10.
 * Risks never change the score; they list what an agent must check before bidding.
 */
export function scoreNotice(
  notice: NormalizedNotice,
  deadline: NoticeDeadline | null,
  input: TenderShortlistInput,
  now: Date,
): Pick<Tender, "fitScore" | "fitReasons" | "risks"> {
  const reasons: [number, string][] = [];
  const risks: string[] = [];
  const titles = notice.ownTitles.map(words);
  const descriptions = notice.ownDescriptions.map(words);
  const inTexts = (texts: string[][], term: string[]) => texts.some((text) => containsWords(text, term));
  const inTitle = (term: string[]) => inTexts(titles, term);
  const inAny = (term: string[]) => inTitle(term) || inTexts(descriptions, term);

  if (input.query) {
    const phrase = words(searchableText(input.query));
    const found = unique(phrase).filter((word) => inAny([word]));
    if (inTitle(phrase)) reasons.push([20, `"${input.query}" appears in the title`]);
    else if (inAny(phrase)) reasons.push([12, `"${input.query}" appears in the description`]);
    else if (found.length > 0) {
      const total = unique(phrase).length;
      reasons.push([
        Math.round((10 * found.length) / total),
        `${found.length} of ${total} query words appear in the title or description (${found.join(", ")})`,
      ]);
    }
  }
  if (input.keywords?.length) {
    const found = input.keywords.filter((keyword) => inAny(words(searchableText(keyword))));
    if (found.length > 0) {
      reasons.push([
        Math.round((15 * found.length) / input.keywords.length),
        `${found.length} of ${input.keywords.length} keywords appear in the title, description or lots (${found.join(", ")})`,
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
    const days = Math.floor((deadline.at.getTime() - now.getTime()) / DAY_MS);
    const when = isoInstant(deadline.at);
    if (days >= LONG_RUNWAY_DAYS) reasons.push([15, `${days} days until the deadline (${when})`]);
    else if (days >= SHORT_RUNWAY_DAYS) reasons.push([8, `${days} days until the deadline (${when})`]);
    else risks.push(`deadline within ${SHORT_RUNWAY_DAYS} days (${when}): little time to prepare a bid`);
  } else {
    risks.push("no submission deadline in the notice data: read it on the notice page");
  }
  const passedRequest = notice.deadlines
    .filter((d) => d.type === "request-to-participate" && d.at.getTime() < now.getTime())
    .at(-1);
  if (passedRequest && deadline?.type === "tender") {
    risks.push(
      `the request-to-participate deadline (${isoInstant(passedRequest.at)}) has passed: only candidates already admitted can tender`,
    );
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
  if (!notice.title) risks.push("no title in the notice data");
  // TED machine-translates every title into English; the procurement's language is the notice's own.
  if (notice.languages.length > 0 && !notice.languages.includes("eng")) {
    const official = notice.languages.join(", ");
    const submission = notice.submissionLanguages.length > 0 ? notice.submissionLanguages.join(", ") : null;
    const source = notice.languagesDeclared
      ? "the notice's official language"
      : "the language of the buyer's own texts";
    risks.push(
      `procurement in ${official}, not English (${source}${submission ? `; tenders in ${submission}` : ""}): ` +
        `the documents and the bid are likely in ${notice.languages[0]}`,
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
  deadline: NoticeDeadline | null,
  input: TenderShortlistInput,
  now: Date,
): Tender {
  return {
    noticeId: notice.noticeId,
    title: notice.title ?? `TED notice ${notice.noticeId}`,
    buyerName: notice.buyerName,
    buyerCountry: notice.buyerCountry,
    deadline: deadline ? isoInstant(deadline.at) : null,
    deadlineType: deadline?.type ?? null,
    deadlines: notice.deadlines.map(({ type, at }) => ({
      type,
      at: isoInstant(at),
      open: at.getTime() >= now.getTime(),
    })),
    estimatedValue: notice.value?.amount ?? null,
    currency: notice.value?.currency ?? null,
    ...scoreNotice(notice, deadline, input, now),
    sourceUrl: notice.sourceUrl,
    submissionUrls: notice.submissionUrls,
    documentUrls: notice.documentUrls,
    noticeType: notice.noticeType,
    publicationDate: notice.publicationDate,
    cpvCodes: notice.cpvCodes,
    lotCount: notice.lotCount,
    languages: notice.languages,
    submissionLanguages: notice.submissionLanguages,
  };
}

export interface FetchedNotices {
  query: string;
  pages: number;
  notices: NormalizedNotice[];
}

/** Fetched notices as the store keeps them: JSON, with the deadlines' instants revived as dates. */
export const fetchedNoticesCodec: Codec<FetchedNotices> = {
  encode: (fetched) => JSON.stringify(fetched),
  decode: (text) => {
    const fetched = JSON.parse(text) as FetchedNotices;
    for (const notice of fetched.notices) {
      notice.deadlines = (notice.deadlines as unknown as { type: NoticeDeadline["type"]; at: string }[]).map(
        ({ type, at }) => ({ type, at: new Date(at) }),
      );
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
      deadline: deadline?.at ?? null,
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
