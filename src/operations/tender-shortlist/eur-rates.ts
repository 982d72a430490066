/**
 * Indicative units of each currency per euro: the currencies TED notices carry (EU, EEA and candidate
 * countries), rounded from the ECB euro reference rates of late 2025 (BGN and BAM are pegged). They only
 * order values in different currencies (`highestValue`) and compare them with `minValue`; no amount is
 * ever converted in an answer. A currency missing here is treated as an unknown value for those two uses.
 */
export const UNITS_PER_EUR: Readonly<Record<string, number>> = {
  EUR: 1,
  BGN: 1.95583,
  BAM: 1.95583,
  CZK: 24.3,
  DKK: 7.46,
  HUF: 390,
  PLN: 4.25,
  RON: 5.08,
  SEK: 11,
  NOK: 11.7,
  ISK: 145,
  CHF: 0.93,
  GBP: 0.87,
  USD: 1.16,
  MKD: 61.5,
  RSD: 117,
  ALL: 97,
};

/** The amount in euros at the indicative rate; undefined for an unknown currency (or none). */
export function approximateEur(amount: number, currency: string | null): number | undefined {
  const rate = currency ? UNITS_PER_EUR[currency] : undefined;
  return rate === undefined ? undefined : amount / rate;
}
