import { decodeHTMLStrict } from "entities";
import type { TedNotice } from "./ted-client.ts";

/** Which deadline: to submit a tender, to request to participate (restricted, negotiated, competitive
 * dialogue), or to express interest (a prior information notice used as a call for competition). */
export type DeadlineType = "tender" | "request-to-participate" | "expression-of-interest";

export interface NoticeDeadline {
  type: DeadlineType;
  at: Date;
}

/** A TED notice read into plain facts, before any filtering or scoring. */
export interface NormalizedNotice {
  noticeId: string;
  title: string | null;
  /** ISO 639-2 code of `title` (TED's three-letter language keys, lower case). */
  titleLanguage: string | null;
  /** Every title text in every language TED gave (framework agreements are named there). */
  titleTexts: string[];
  /**
   * What the buyer wrote: the procedure's and the lots' titles (`title-proc`, `title-lot`; without them the
   * buyer's part of `notice-title`, after TED's country and category label) and descriptions
   * (`description-proc`, `description-lot`). Query and keywords are scored here, never in TED's labels.
   */
  ownTitles: string[];
  ownDescriptions: string[];
  buyerName: string | null;
  buyerCountry: string | null;
  buyerCountries: string[];
  /** Every deadline TED published (each kind, each lot, with its time when given), earliest first, each once. */
  deadlines: NoticeDeadline[];
  value: { amount: number; currency: string | null } | null;
  /** Currencies of a value source that mixed them (never summed). */
  mixedCurrencies: string[];
  sourceUrl: string;
  /** The buyer's submission and procurement-document URLs (http and https only, each once). */
  submissionUrls: string[];
  documentUrls: string[];
  noticeType: string | null;
  formType: string | null;
  publicationDate: string | null;
  cpvCodes: string[];
  lotCount: number | null;
  /** The notice's official languages (`official-language`), else the languages the buyer's texts are in. */
  languages: string[];
  /** Whether `languages` comes from TED's `official-language` field (else from the buyer's texts). */
  languagesDeclared: boolean;
  /** Languages in which tenders or requests may be submitted (`submission-language`); empty when not given. */
  submissionLanguages: string[];
  frameworkAgreement: "field" | "title" | null;
  /** Notices with the same key are versions of one procedure. */
  procedureKey: string;
  /** Orders versions of one procedure: the greatest is the latest. */
  versionOrder: [string, number, number, number];
}

const TED_NOTICE_PAGE = "https://ted.europa.eu/en/notice/-/detail/";

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A field as a list of non-empty strings, whatever its shape (a string, a number, a list). */
function strings(value: unknown): string[] {
  const items = Array.isArray(value) ? value : value === undefined || value === null ? [] : [value];
  return items
    .filter((item) => typeof item === "string" || typeof item === "number")
    .map((item) => String(item).trim())
    .filter((item) => item !== "");
}

const unique = <T>(values: readonly T[]) => [...new Set(values)];

/** A language map (`{ eng: "…" }` or `{ eng: ["…"] }`) as language → texts; anything else is empty. */
function languageMap(value: unknown): Map<string, string[]> {
  const map = new Map<string, string[]>();
  if (!isRecord(value)) return map;
  for (const [language, texts] of Object.entries(value)) {
    const list = strings(texts).map(decodeEntities);
    if (list.length > 0) map.set(language.toLowerCase(), list);
  }
  return map;
}

/**
 * TED passes some buyer names and titles through with HTML entities ("Falu Energi &amp; Vatten",
 * "M&uuml;nchen"): every named entity of HTML and numeric references, strictly (only with the ";",
 * so "AT&T" and "&notice" stay text); a numeric reference past U+10FFFF, or 0, is U+FFFD.
 */
export function decodeEntities(text: string): string {
  return text.includes("&") ? decodeHTMLStrict(text) : text;
}

/** The first language present in `preferences`, else the first language of the map. */
function pick(map: Map<string, string[]>, preferences: readonly string[]): [string, string] | null {
  for (const language of [...preferences, ...map.keys()]) {
    const text = map.get(language)?.[0];
    if (text !== undefined) return [language, text];
  }
  return null;
}

const DATE = /^(\d{4}-\d{2}-\d{2})(Z|[+-]\d{2}:\d{2})?$/;
const TIME = /^(\d{2}:\d{2}(?::\d{2})?)(Z|[+-]\d{2}:\d{2})?$/;

/**
 * A TED deadline day (`2026-11-04+01:00`) with the lot's time if TED gives one (`10:00:00+01:00`), as an
 * instant. A day without a time is the end of that day in the notice's own time zone.
 */
export function deadlineInstant(day: string, time?: string): Date | null {
  const date = DATE.exec(day.trim());
  if (!date) return null;
  const [, ymd, dayZone = "Z"] = date;
  const clock = time ? TIME.exec(time.trim()) : null;
  const hms = clock ? (clock[1] as string).padEnd(8, ":00").slice(0, 8) : "23:59:59";
  const zone = clock?.[2] ?? dayZone;
  const instant = new Date(`${ymd}T${hms}${zone}`);
  return Number.isNaN(instant.getTime()) ? null : instant;
}

/** `2026-10-07+02:00` → `2026-10-07` (the day where the notice was published). */
function calendarDay(value: unknown): string | null {
  const first = strings(value)[0];
  const match = first ? DATE.exec(first) : null;
  return match ? (match[1] as string) : null;
}

function amounts(value: unknown): number[] {
  return strings(value)
    .map(Number)
    .filter((amount) => Number.isFinite(amount) && amount >= 0);
}

/**
 * The estimated value from the most specific source that has one: the procedure's estimate, the sum of
 * the lots' estimates, the sum of the lot groups', then the total value. A source whose amounts come in
 * several currencies is not summed: it is reported as mixed and the next source is tried.
 */
function estimatedValue(notice: TedNotice): Pick<NormalizedNotice, "value" | "mixedCurrencies"> {
  const sources: [string, string][] = [
    ["estimated-value-proc", "estimated-value-cur-proc"],
    ["estimated-value-lot", "estimated-value-cur-lot"],
    ["estimated-value-glo", "estimated-value-cur-glo"],
    ["total-value", "total-value-cur"],
  ];
  let mixedCurrencies: string[] = [];
  for (const [valueField, currencyField] of sources) {
    const values = amounts(notice[valueField]);
    if (values.length === 0) continue;
    const currencies = unique(strings(notice[currencyField]).map((code) => code.toUpperCase()));
    if (currencies.length > 1) {
      if (mixedCurrencies.length === 0) mixedCurrencies = currencies;
      continue;
    }
    const amount = values.reduce((sum, part) => sum + part, 0);
    return { value: { amount, currency: currencies[0] ?? null }, mixedCurrencies };
  }
  return { value: null, mixedCurrencies };
}

/**
 * Titles that name a framework agreement in the EU languages most notices use (compared without accents
 * and case): the search fields do not always carry `framework-agreement-lot`.
 */
const FRAMEWORK_WORDS =
  /framework (?:agreement|contract)|rahmen(?:vertrag|vereinbarung)|raamovereenkomst|accords?[- ]cadres?|accordo quadro|acuerdo marco|acordo[- ]quadro|umow[ay] ramow|ramavtal|rammeaftale|rammeavtale|puitesopimu|ramcov[ae] dohod|keretmegallapodas|acord[- ]cadru|okvirni sporazum|raamleping|pamatnoligum|preliminarioji sutart|рамково споразумение|συμφωνια[ς]?[- ]πλαισιο/;

export const foldText = (text: string) => text.normalize("NFD").replace(/\p{M}/gu, "").toLowerCase();

function frameworkAgreement(notice: TedNotice, titleTexts: string[]): NormalizedNotice["frameworkAgreement"] {
  const declared = strings(notice["framework-agreement-lot"]).map((code) => code.toLowerCase());
  if (declared.some((code) => code !== "none")) return "field";
  if (titleTexts.some((text) => FRAMEWORK_WORDS.test(foldText(text)))) return "title";
  return null;
}

/** "690555-2026" → [2026, 690555], so numbers compare by year, then sequence. */
function publicationOrder(noticeId: string): [number, number] {
  const match = /^(\d+)-(\d{4})$/.exec(noticeId);
  return match ? [Number(match[2]), Number(match[1])] : [0, 0];
}

function sourceUrl(notice: TedNotice, noticeId: string): string {
  const links = notice.links;
  const html = isRecord(links) && isRecord(links.html) ? links.html.ENG : undefined;
  if (typeof html === "string") {
    try {
      const url = new URL(html);
      if (url.protocol === "https:" && url.hostname === "ted.europa.eu") return url.href;
    } catch {
      // an unreadable link: the official page is known from the publication number
    }
  }
  return TED_NOTICE_PAGE + encodeURIComponent(noticeId);
}

/** Lower-case ISO 639-2 codes of a language field (`["DEU", "ENG"]`), each once; `mul` is no language. */
const languageCodes = (value: unknown) =>
  unique(strings(value).map((code) => code.toLowerCase())).filter(
    (code) => /^[a-z]{3}$/.test(code) && code !== "mul",
  );

/** The date and time fields of each kind of deadline TED publishes (per lot, lists in lot order). */
const DEADLINE_FIELDS: readonly [DeadlineType, string, string][] = [
  ["tender", "deadline-receipt-tender-date-lot", "deadline-receipt-tender-time-lot"],
  ["request-to-participate", "deadline-receipt-request-date-lot", "deadline-receipt-request-time-lot"],
  [
    "expression-of-interest",
    "deadline-receipt-expressions-date-lot",
    "deadline-receipt-expressions-time-lot",
  ],
];

/**
 * Every deadline of every kind as an instant, earliest first, each (kind, instant) once. A day takes the time
 * at the same position (one time for all days when TED gives one), else the end of that day in its zone.
 */
export function readDeadlines(notice: TedNotice): NoticeDeadline[] {
  const seen = new Set<string>();
  const deadlines: NoticeDeadline[] = [];
  for (const [type, dayField, timeField] of DEADLINE_FIELDS) {
    const days = strings(notice[dayField]);
    const times = strings(notice[timeField]);
    days.forEach((day, index) => {
      const time = times.length === days.length ? times[index] : times.length === 1 ? times[0] : undefined;
      const at = deadlineInstant(day, time);
      if (!at || seen.has(`${type}@${at.getTime()}`)) return;
      seen.add(`${type}@${at.getTime()}`);
      deadlines.push({ type, at });
    });
  }
  return deadlines.sort((a, b) => a.at.getTime() - b.at.getTime() || a.type.localeCompare(b.type));
}

/** TED's `notice-title` is "country – category label – the buyer's title"; the buyer's part is the same in every language. */
function buyerPartOfNoticeTitle(text: string): string {
  const parts = text.split(" – ");
  return parts.length >= 3 ? parts.slice(2).join(" – ") : text;
}

function ownTexts(
  notice: TedNotice,
  noticeTitles: Map<string, string[]>,
  procedureTitles: Map<string, string[]>,
): Pick<NormalizedNotice, "ownTitles" | "ownDescriptions"> {
  const all = (field: string) => [...languageMap(notice[field]).values()].flat();
  const declared = [...procedureTitles.values()].flat();
  const titles =
    declared.length > 0 ? declared : [...noticeTitles.values()].flat().map(buyerPartOfNoticeTitle);
  return {
    ownTitles: unique([...titles, ...all("title-lot")]),
    ownDescriptions: unique([...all("description-proc"), ...all("description-lot")]),
  };
}

/** http(s) URLs of a URL field, each once; anything else (a mail address, free text) is left out. */
function webUrls(value: unknown): string[] {
  const urls: string[] = [];
  for (const text of strings(value)) {
    try {
      const url = new URL(text);
      if (url.protocol === "https:" || url.protocol === "http:") urls.push(url.href);
    } catch {
      // not a URL
    }
  }
  return unique(urls);
}

export function normalizeNotice(notice: TedNotice): NormalizedNotice {
  const noticeId = String(notice["publication-number"]);
  const noticeTitles = languageMap(notice["notice-title"]);
  const procedureTitles = languageMap(notice["title-proc"]);
  const buyerNames = languageMap(notice["buyer-name"]);
  const officialLanguages = languageCodes(notice["official-language"]);
  // The buyer writes in the notice's official language(s); TED adds machine translations of the title.
  const buyerLanguages = unique([
    ...officialLanguages,
    ...buyerNames.keys(),
    ...procedureTitles.keys(),
  ]).filter((language) => language !== "mul");
  const preferences = ["eng", ...buyerLanguages];
  const title = pick(noticeTitles, preferences) ?? pick(procedureTitles, preferences);
  const titleTexts = [...noticeTitles.values(), ...procedureTitles.values()].flat();
  const buyer = pick(buyerNames, preferences);
  const buyerCountries = unique(strings(notice["buyer-country"]).map((code) => code.toUpperCase()));

  const deadlines = readDeadlines(notice);
  const days = strings(notice["deadline-receipt-tender-date-lot"]);
  const requestDays = strings(notice["deadline-receipt-request-date-lot"]);

  const lots = unique(strings(notice["identifier-lot"]));
  const lotCount = lots.length > 0 ? lots.length : Math.max(days.length, requestDays.length) || null;

  // Versions of one notice share its identifier; notices of one procedure share the procedure's. Without
  // either (fields TED leaves out), the buyer and the title in the buyer's language name the procedure.
  const procedureId = strings(notice["procedure-identifier"])[0];
  const noticeIdentifier = strings(notice["notice-identifier"])[0];
  const ownTitle = pick(procedureTitles, buyerLanguages) ?? pick(noticeTitles, buyerLanguages) ?? title;
  const procedureKey = procedureId
    ? `procedure:${procedureId}`
    : noticeIdentifier
      ? `notice:${noticeIdentifier}`
      : `buyer-title:${foldText(buyer?.[1] ?? "")}|${foldText(ownTitle?.[1] ?? noticeId)}`;

  const publicationDate = calendarDay(notice["publication-date"]);
  const version = Number(strings(notice["notice-version"])[0] ?? 0) || 0;

  return {
    noticeId,
    title: title?.[1] ?? null,
    titleLanguage: title?.[0] ?? null,
    titleTexts,
    ...ownTexts(notice, noticeTitles, procedureTitles),
    buyerName: buyer?.[1] ?? null,
    buyerCountry: buyerCountries[0] ?? null,
    buyerCountries,
    deadlines,
    ...estimatedValue(notice),
    sourceUrl: sourceUrl(notice, noticeId),
    submissionUrls: webUrls(notice["submission-url-lot"]),
    documentUrls: webUrls(notice["document-url-lot"]),
    noticeType: strings(notice["notice-type"])[0]?.toLowerCase() ?? null,
    formType: strings(notice["form-type"])[0]?.toLowerCase() ?? null,
    publicationDate,
    cpvCodes: unique(strings(notice["classification-cpv"]).map((code) => code.replace(/-\d$/, ""))),
    lotCount,
    languages: officialLanguages.length > 0 ? officialLanguages : buyerLanguages,
    languagesDeclared: officialLanguages.length > 0,
    submissionLanguages: languageCodes(notice["submission-language"]),
    frameworkAgreement: frameworkAgreement(notice, titleTexts),
    procedureKey,
    versionOrder: [publicationDate ?? "", version, ...publicationOrder(noticeId)],
  };
}
