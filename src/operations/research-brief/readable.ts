import { Readability } from "@mozilla/readability";
import { parseHTML } from "linkedom";
import { squeeze } from "./text.ts";

export interface ReadablePage {
  title: string;
  /** Main text, one block (paragraph, heading, list item) per paragraph, separated by blank lines. */
  text: string;
  publishedAt?: string;
}

const BLOCKS = "h1,h2,h3,h4,h5,h6,p,li,blockquote,pre,td,th,dd,dt,figcaption";

/** Paragraph-separated text of an HTML fragment: one entry per innermost block element. */
function blocksOf(html: string): string[] {
  const { document } = parseHTML(`<!doctype html><html><body>${html}</body></html>`);
  const blocks = [...document.querySelectorAll(BLOCKS)]
    .filter((element) => element.querySelector(BLOCKS) === null)
    .map((element) => squeeze(element.textContent ?? ""))
    .filter(Boolean);
  return blocks.length > 0 ? blocks : [squeeze(document.body?.textContent ?? "")].filter(Boolean);
}

/**
 * The main text of a page: HTML through Mozilla Readability on linkedom (navigation, footers and
 * ads dropped); plain text as it is.
 */
export function readablePage(body: string, contentType: string, fallbackTitle: string): ReadablePage {
  if (contentType.startsWith("text/plain")) {
    const paragraphs = body
      .split(/\n\s*\n/)
      .map(squeeze)
      .filter(Boolean);
    return { title: fallbackTitle, text: paragraphs.join("\n\n") };
  }
  const { document } = parseHTML(body);
  const article = new Readability(document as unknown as Document).parse();
  const title = squeeze(article?.title ?? "") || fallbackTitle;
  const text = article?.content ? blocksOf(article.content).join("\n\n") : "";
  const publishedAt = article?.publishedTime ? squeeze(article.publishedTime) : undefined;
  return { title, text, ...(publishedAt ? { publishedAt } : {}) };
}
