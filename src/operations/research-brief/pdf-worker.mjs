// Reads the text of one PDF in a worker thread (see pdfText in readable.ts): PDF.js, through unpdf,
// parses a document anyone on the web wrote, so it runs off the main thread with its own heap limit
// and is terminated when it takes too long. Plain JavaScript so that it loads in a worker without
// the TypeScript loader.
import { parentPort, workerData } from "node:worker_threads";
import { getDocumentProxy } from "unpdf";

const { bytes, maxPages, maxChars } = workerData;

/** Lines of a page from PDF.js text items: a new line at an end-of-line mark or a change of baseline. */
function linesOf(items) {
  const lines = [];
  let current;
  let endOfLine = true;
  for (const item of items) {
    if (typeof item.str !== "string") continue;
    const y = item.transform[5];
    const height = Math.abs(item.height || item.transform[3] || 10);
    if (!current || endOfLine || Math.abs(y - current.y) > height / 2) {
      if (current?.text.trim()) lines.push(current);
      current = { text: "", y, height };
    }
    current.text += item.str;
    endOfLine = item.hasEOL;
  }
  if (current?.text.trim()) lines.push(current);
  return lines;
}

/** Joins lines into paragraphs: a gap clearly wider than the page's usual line spacing starts one. */
function paragraphsOf(lines) {
  const gaps = [];
  for (let index = 1; index < lines.length; index++) {
    const gap = lines[index - 1].y - lines[index].y;
    if (gap > 0) gaps.push(gap);
  }
  gaps.sort((a, b) => a - b);
  const usual = gaps.length > 0 ? gaps[Math.floor(gaps.length / 2)] : 0;
  const paragraphs = [];
  let paragraph = "";
  lines.forEach((line, index) => {
    const gap = index > 0 ? lines[index - 1].y - line.y : 0;
    const text = line.text.replace(/\s+/g, " ").trim();
    const breaks = index > 0 && (gap <= 0 || gap > usual * 1.5 || gap > line.height * 2.5);
    if (breaks && paragraph) {
      paragraphs.push(paragraph);
      paragraph = "";
    }
    if (!paragraph) paragraph = text;
    else if (/\p{L}-$/u.test(paragraph) && /^\p{Ll}/u.test(text)) paragraph = paragraph.slice(0, -1) + text;
    else paragraph = `${paragraph} ${text}`;
  });
  if (paragraph) paragraphs.push(paragraph);
  return paragraphs;
}

try {
  const pdf = await getDocumentProxy(new Uint8Array(bytes), { stopAtErrors: false });
  const pages = Math.min(pdf.numPages, maxPages);
  const paragraphs = [];
  let chars = 0;
  for (let number = 1; number <= pages && chars < maxChars; number++) {
    const page = await pdf.getPage(number);
    const content = await page.getTextContent();
    for (const paragraph of paragraphsOf(linesOf(content.items))) {
      paragraphs.push(paragraph);
      chars += paragraph.length + 2;
    }
    page.cleanup();
  }
  parentPort.postMessage({
    ok: true,
    text: paragraphs.join("\n\n").slice(0, maxChars),
    pages: pdf.numPages,
    pagesRead: pages,
  });
  await pdf.destroy();
} catch (error) {
  parentPort.postMessage({ ok: false, message: error instanceof Error ? error.message : String(error) });
}
