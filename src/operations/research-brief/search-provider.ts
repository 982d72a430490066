/** What a search provider gives the pipeline: a leaf module, so the providers and search.ts (which picks them) do not import each other. */

/** A source's text as an API gives it (Wikipedia, Crossref): read from here, never fetched as a page. */
export interface SourceDocument {
  /** The URL to cite: a Wikipedia revision permalink, a https://doi.org/ link. */
  url: string;
  title: string;
  /** Paragraphs separated by blank lines. */
  text: string;
  publishedAt?: string;
  kind: "wikipedia" | "crossref";
  /** A caveat-ready licence note the brief must carry when this source is used. */
  licence?: string;
  /** Fewer words than this and it is not a source (default: the pipeline's minimum for web pages). */
  minWords?: number;
}

export interface SearchHit {
  url: string;
  title: string;
  snippet: string;
  publishedAt?: string;
  /** Present when the hit's text comes from the search API itself (one more call at most). */
  document?: (signal?: AbortSignal) => Promise<SourceDocument>;
}

export interface SearchProvider {
  /** The provider, or the providers used joined by "+" (e.g. "wikipedia+crossref"). */
  readonly name: string;
  search(query: string, options: { count: number; signal?: AbortSignal }): Promise<SearchHit[]>;
}
