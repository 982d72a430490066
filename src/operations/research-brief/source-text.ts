/** Markup helpers for the text APIs (Wikipedia search snippets, Crossref titles and JATS abstracts). */

const NAMED_ENTITIES: Record<string, string> = {
  amp: "&",
  lt: "<",
  gt: ">",
  quot: '"',
  apos: "'",
  nbsp: " ",
  ndash: "–",
  mdash: "—",
  hellip: "…",
};

/** Decodes the character references these APIs use (&amp;, &quot;, &#39;, &#x2019;, …). */
export function decodeEntities(text: string): string {
  return text.replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (whole, name: string) => {
    if (name[0] === "#") {
      const code =
        name[1] === "x" || name[1] === "X" ? Number.parseInt(name.slice(2), 16) : Number(name.slice(1));
      return Number.isInteger(code) && code > 0 && code <= 0x10ffff ? String.fromCodePoint(code) : whole;
    }
    return NAMED_ENTITIES[name.toLowerCase()] ?? whole;
  });
}

/** Tags (<span class="searchmatch">, <jats:italic>, <scp>) dropped, entities decoded, white space squeezed. */
export function stripMarkup(text: string): string {
  return decodeEntities(text.replace(/<\/?[A-Za-z][^>]*>/g, ""))
    .replace(/\s+/g, " ")
    .trim();
}

/** Block-level ends of JATS and HTML abstracts: each closes a paragraph. */
const BLOCK_END =
  /<\/(?:jats:)?(?:p|title|sec|list-item|li)>|<(?:jats:)?(?:p|title|sec|list-item|li)(?:\s[^>]*)?>/gi;

/** A JATS (or HTML) abstract as plain paragraphs separated by blank lines; a lone "Abstract" heading dropped. */
export function jatsParagraphs(abstract: string): string[] {
  return abstract
    .replace(BLOCK_END, "\n\n")
    .split(/\n\s*\n/)
    .map(stripMarkup)
    .filter((paragraph) => paragraph !== "" && !/^abstract$/i.test(paragraph));
}
