import type { Statement } from "better-sqlite3";
import { type Cursor, cursorFingerprint, decodeCursor, encodeCursor, searchTerms } from "./cursor.ts";
import type { TrialsDatabase } from "./database.ts";
import { readDataset } from "./dataset.ts";
import type { ClinicalTrialsQueryInput, ClinicalTrialsQueryOutput, Dataset } from "./schema.ts";
import type { TrialSummary } from "./summary.ts";

/**
 * BM25 column weights (title, conditions, interventions, sponsor, outcomes): a word in the title
 * or the conditions says more about what a trial studies than the same word in an outcome title.
 */
const BM25_WEIGHTS = "10.0, 6.0, 6.0, 2.0, 1.0";

/** All the words, in any order and any column (each quoted, so no user text is read as FTS5 syntax). */
const allWords = (text: string) =>
  searchTerms(text)
    .map((term) => `"${term}"`)
    .join(" ");

/** The words as one phrase within one column. */
const phraseIn = (column: string, text: string) => `{${column}} : "${searchTerms(text).join(" ")}"`;

interface Row {
  id: number;
  nct_id: string;
  key: number | string;
  /** Only when the page query counts the matches too. */
  total?: number;
}

/** The loaded database, queried read-only. The totals are counted once, when it is opened. */
export class TrialsIndex {
  readonly dataset: Dataset;
  private readonly statements = new Map<string, Statement>();

  constructor(private readonly db: TrialsDatabase) {
    this.dataset = readDataset(db);
  }

  private statement(sql: string): Statement {
    let statement = this.statements.get(sql);
    if (!statement) {
      statement = this.db.prepare(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  private count(
    ranked: boolean,
    from: string,
    where: string[],
    fromParams: string[],
    params: (string | number)[],
  ): number {
    // With nothing but the text, the index counts its matches without visiting the rows.
    const sql =
      ranked && where.length === 0
        ? "SELECT count(*) AS total FROM studies_fts WHERE studies_fts MATCH ?"
        : `SELECT count(*) AS total FROM ${from} ${where.length > 0 ? `WHERE ${where.join(" AND ")}` : ""}`;
    return (this.statement(sql).get(...fromParams, ...params) as { total: number }).total;
  }

  query(input: ClinicalTrialsQueryInput): ClinicalTrialsQueryOutput {
    const ranked = input.query !== undefined;
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (input.nctId !== undefined) {
      where.push("s.nct_id = ?");
      params.push(input.nctId);
    }
    for (const [column, value] of [
      ["conditions", input.condition],
      ["interventions", input.intervention],
      ["sponsor", input.sponsor],
    ] as const) {
      if (value === undefined) continue;
      where.push("s.id IN (SELECT rowid FROM studies_fts WHERE studies_fts MATCH ?)");
      params.push(phraseIn(column, value));
    }
    if (input.phase !== undefined) {
      where.push("s.id IN (SELECT study_id FROM study_phases WHERE phase = ?)");
      params.push(input.phase);
    }
    if (input.startedAfter !== undefined) {
      where.push("s.start_day >= ?");
      params.push(input.startedAfter);
    }
    if (input.completedBefore !== undefined) {
      where.push("s.completion_day <= ?");
      params.push(input.completedBefore);
    }
    if (input.minEnrollment !== undefined) {
      where.push("s.enrollment >= ?");
      params.push(input.minEnrollment);
    }

    // Text queries rank by BM25 (lower is better in SQLite); the others list the newest starts first.
    const from = ranked
      ? `(SELECT rowid AS id, bm25(studies_fts, ${BM25_WEIGHTS}) AS score FROM studies_fts WHERE studies_fts MATCH ?) hits
         JOIN studies s ON s.id = hits.id`
      : "studies s";
    const fromParams = ranked ? [allWords(input.query as string)] : [];
    const key = ranked ? "hits.score" : "s.start_day";
    const order = ranked ? "hits.score ASC, s.nct_id ASC" : "s.start_day DESC, s.nct_id ASC";
    const after = ranked
      ? "(hits.score > ? OR (hits.score = ? AND s.nct_id > ?))"
      : "(s.start_day < ? OR (s.start_day = ? AND s.nct_id > ?))";

    const cursor: Cursor | null = input.cursor ? decodeCursor(input.cursor, ranked) : null;
    const pageWhere = cursor ? [...where, after] : where;
    const pageParams = cursor ? [...params, cursor.key, cursor.key, cursor.nctId] : params;
    // The first page of a filtered text query must visit every match to rank it anyway: the same
    // pass counts them (a window over the unlimited result), instead of a second join.
    const countInPage = ranked && where.length > 0 && !cursor;
    const rows = this.statement(
      `SELECT s.id, s.nct_id, ${key} AS key${countInPage ? ", count(*) OVER () AS total" : ""} FROM ${from}
       ${pageWhere.length > 0 ? `WHERE ${pageWhere.join(" AND ")}` : ""}
       ORDER BY ${order} LIMIT ?`,
    ).all(...fromParams, ...pageParams, input.limit + 1) as Row[];
    const total = countInPage ? (rows[0]?.total ?? 0) : this.count(ranked, from, where, fromParams, params);

    const page = rows.slice(0, input.limit);
    // A summary holds the primary outcomes; the secondary and other ones are read only when asked for.
    const summaryOf = this.statement("SELECT summary FROM study_summaries WHERE study_id = ?");
    const moreOf = this.statement("SELECT secondary, other FROM study_more_outcomes WHERE study_id = ?");
    const last = page.at(-1);
    return {
      count: page.length,
      total,
      // Fetched for the page only: a sort over the matches carries narrow rows, not kilobytes of JSON each.
      items: page.map((row) => {
        const summary = JSON.parse((summaryOf.get(row.id) as { summary: string }).summary) as TrialSummary;
        if (!input.includeSecondary) return summary;
        const more = moreOf.get(row.id) as { secondary: string; other: string } | undefined;
        return {
          ...summary,
          secondaryOutcomes: more ? (JSON.parse(more.secondary) as TrialSummary["secondaryOutcomes"]) : [],
          otherOutcomes: more ? (JSON.parse(more.other) as TrialSummary["otherOutcomes"]) : [],
        };
      }),
      nextCursor:
        rows.length > input.limit && last
          ? encodeCursor({ filters: cursorFingerprint(input), key: last.key, nctId: last.nct_id })
          : null,
      dataset: this.dataset,
    };
  }
}
