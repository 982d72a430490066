/**
 * A small, valid PDF 1.4 document written by hand: one page per entry of `pages`, each a list of
 * paragraphs set in Helvetica 11 pt, a paragraph's lines 14 pt apart and a blank line between
 * paragraphs (the gap the PDF reader takes as a paragraph break). Long paragraphs are wrapped at
 * about 80 characters. The cross-reference table has the exact byte offsets PDF readers check.
 */
export function minimalPdf(pages: string[][], title = "Test document"): Buffer {
  const quote = (text: string) => text.replace(/[\\()]/g, (character) => `\\${character}`);
  const wrap = (paragraph: string) => {
    const lines: string[] = [];
    let line = "";
    for (const word of paragraph.split(/\s+/)) {
      if (line && line.length + word.length + 1 > 80) {
        lines.push(line);
        line = word;
      } else line = line ? `${line} ${word}` : word;
    }
    if (line) lines.push(line);
    return lines;
  };
  const objects: string[] = [];
  const add = (body: string) => objects.push(body);
  add("<< /Type /Catalog /Pages 2 0 R >>"); // 1
  add(""); // 2: the page tree, written when the pages' numbers are known
  add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"); // 3
  add(`<< /Title (${quote(title)}) /Producer (utility402 tests) >>`); // 4
  const kids: number[] = [];
  for (const paragraphs of pages) {
    const lines = paragraphs.flatMap((paragraph, index) => [...(index > 0 ? [""] : []), ...wrap(paragraph)]);
    const content = [
      "BT",
      "/F1 11 Tf",
      "14 TL",
      "56 770 Td",
      ...lines.map((line) => (line ? `(${quote(line)}) Tj T*` : "T*")),
      "ET",
    ].join("\n");
    add(`<< /Length ${Buffer.byteLength(content, "latin1")} >>\nstream\n${content}\nendstream`);
    const contentNumber = objects.length;
    add(
      `<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842] /Contents ${contentNumber} 0 R /Resources << /Font << /F1 3 0 R >> >> >>`,
    );
    kids.push(objects.length);
  }
  objects[1] = `<< /Type /Pages /Kids [${kids.map((kid) => `${kid} 0 R`).join(" ")}] /Count ${kids.length} >>`;
  let pdf = "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n";
  const offsets: number[] = [];
  objects.forEach((body, index) => {
    offsets.push(Buffer.byteLength(pdf, "latin1"));
    pdf += `${index + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(pdf, "latin1");
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  pdf += offsets.map((offset) => `${String(offset).padStart(10, "0")} 00000 n \n`).join("");
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R /Info 4 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, "latin1");
}
