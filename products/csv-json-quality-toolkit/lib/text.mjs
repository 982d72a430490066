// Bytes of an input file → text, in pieces cut anywhere (inside a UTF-8 sequence, a BOM, a UTF-16
// pair). UTF-8 (with or without a BOM) and UTF-16 (LE or BE, with a BOM, or without one when the
// text is mostly ASCII, the only UTF-16 that can be recognised) are decoded; anything else is
// refused with the offset of the first wrong byte, never read as text with replacement characters
// or NULs: bytes that are not UTF-8 (Latin-1, Windows-1252), UTF-32, binary files.

/** Bytes looked at to recognise UTF-16 without a BOM. */
const SNIFF_BYTES = 512;

/** What the first bytes say: an encoding, or a reason to refuse. */
function sniffEncoding(head) {
  const b = (i) => head[i];
  if (head.length >= 4 && ((b(0) === 0xff && b(1) === 0xfe && b(2) === 0 && b(3) === 0) || (b(0) === 0 && b(1) === 0 && b(2) === 0xfe && b(3) === 0xff))) {
    return { refuse: "UTF-32 text (by its byte order mark): save it as UTF-8" };
  }
  if (head.length >= 2 && b(0) === 0xff && b(1) === 0xfe) return { encoding: "utf-16le" };
  if (head.length >= 2 && b(0) === 0xfe && b(1) === 0xff) return { encoding: "utf-16be" };
  // No BOM: text in UTF-16 that is mostly ASCII has a NUL in every other byte, and UTF-8 text none
  // (a NUL left after this is refused).
  const pairs = Math.floor(Math.min(head.length, SNIFF_BYTES) / 2);
  let evenNuls = 0;
  let oddNuls = 0;
  for (let i = 0; i < pairs; i++) {
    if (b(2 * i) === 0) evenNuls++;
    if (b(2 * i + 1) === 0) oddNuls++;
  }
  if (oddNuls > 0 && oddNuls >= pairs / 2 && evenNuls <= oddNuls / 4) return { encoding: "utf-16le" };
  if (evenNuls > 0 && evenNuls >= pairs / 2 && oddNuls <= evenNuls / 4) return { encoding: "utf-16be" };
  return { encoding: "utf-8" };
}

/** The offset of the first byte that does not belong to well-formed UTF-8 (RFC 3629), or -1. */
function firstInvalidUtf8(bytes) {
  for (let i = 0; i < bytes.length; ) {
    const b = bytes[i];
    let need;
    let min = 0x80;
    let max = 0xbf;
    if (b < 0x80) {
      i++;
      continue;
    } else if (b >= 0xc2 && b <= 0xdf) need = 1;
    else if (b >= 0xe0 && b <= 0xef) {
      need = 2;
      if (b === 0xe0) min = 0xa0;
      if (b === 0xed) max = 0x9f; // no surrogates
    } else if (b >= 0xf0 && b <= 0xf4) {
      need = 3;
      if (b === 0xf0) min = 0x90;
      if (b === 0xf4) max = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i; // cut short by the end
      if (c < (k === 1 ? min : 0x80) || c > (k === 1 ? max : 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** How many bytes at the end of `bytes` begin a UTF-8 sequence that they do not complete (0 to 3). */
function cutSequence(bytes) {
  for (let k = 1; k <= Math.min(3, bytes.length); k++) {
    const b = bytes[bytes.length - k];
    if (b >= 0x80 && b <= 0xbf) continue; // a continuation byte: look further back
    const length = b >= 0xf0 ? 4 : b >= 0xe0 ? 3 : b >= 0xc0 ? 2 : 1;
    return length > k ? k : 0;
  }
  return 0;
}

/**
 * Decodes an input file's bytes as they stream: `write(bytes)` returns the text decoded so far
 * (perhaps ""), `end()` the rest. A leading BOM is dropped. Throws an Error whose message says what
 * is wrong and where (byte offset): not UTF-8 or UTF-16, a NUL character, a truncated sequence.
 */
export class InputDecoder {
  #head = [];
  #headBytes = 0;
  #decoder;
  #encoding;
  #swap = false; // UTF-16BE: bytes swapped into LE, which every Node build decodes
  #odd; // UTF-16BE: the odd byte of a piece, kept for the next one
  #bytes = 0; // bytes decoded before the current piece
  #chars = 0; // characters decoded so far
  #tail = Buffer.alloc(0); // UTF-8: the bytes of a sequence cut at the end of the last piece (for error offsets)

  /** The encoding read from the first bytes (undefined before any). */
  get encoding() {
    return this.#encoding;
  }

  /** Characters decoded so far (the BOM not counted). */
  get characters() {
    return this.#chars;
  }

  write(bytes) {
    if (!this.#decoder) {
      this.#head.push(bytes);
      this.#headBytes += bytes.length;
      if (this.#headBytes < SNIFF_BYTES) return "";
      return this.#start();
    }
    return this.#decode(bytes, true);
  }

  end() {
    let text = this.#decoder ? "" : this.#start();
    if (this.#odd !== undefined) throw new Error("UTF-16 text cut in the middle of a character (an odd number of bytes)");
    text += this.#decode(new Uint8Array(0), false);
    return text;
  }

  #start() {
    const head = Buffer.concat(this.#head);
    this.#head = [];
    const sniffed = sniffEncoding(head);
    if (sniffed.refuse) throw new Error(sniffed.refuse);
    this.#encoding = sniffed.encoding;
    this.#swap = sniffed.encoding === "utf-16be";
    this.#decoder = new TextDecoder(this.#swap ? "utf-16le" : sniffed.encoding, { fatal: true });
    return this.#decode(head, true);
  }

  #decode(bytes, stream) {
    let input = bytes;
    if (this.#swap) {
      if (this.#odd !== undefined) {
        input = Buffer.concat([Buffer.from([this.#odd]), input]);
        this.#odd = undefined;
      }
      const even = input.length & ~1;
      if (even < input.length) this.#odd = input[even];
      input = Buffer.from(input.subarray(0, even)).swap16();
    }
    let text;
    try {
      text = this.#decoder.decode(input, { stream });
    } catch {
      throw new Error(this.#invalid(input));
    }
    this.#bytes += input.length;
    if (this.#encoding === "utf-8") {
      const last = input.length >= 3 ? input.subarray(input.length - 3) : Buffer.concat([this.#tail, input]);
      this.#tail = last.subarray(last.length - cutSequence(last));
    }
    const nul = text.indexOf("\0");
    if (nul !== -1) {
      throw new Error(`a NUL character (character ${this.#chars + nul + 1}): not text in UTF-8 or UTF-16 (UTF-32, or a binary file?)`);
    }
    this.#chars += text.length;
    return text;
  }

  #invalid(input) {
    if (this.#encoding !== "utf-8") return `not valid ${this.#encoding.toUpperCase()} (in the bytes from offset ${this.#bytes}): save it as UTF-8`;
    // A sequence cut at the end of the last piece starts before this one.
    const bytes = Buffer.concat([this.#tail, input]);
    const at = Math.max(firstInvalidUtf8(bytes), 0);
    const offset = this.#bytes - this.#tail.length + at;
    if (at >= bytes.length) return `not valid UTF-8 (it ends inside a character, at byte ${offset})`;
    return `not valid UTF-8 (byte ${offset} is 0x${bytes[at].toString(16).padStart(2, "0")}): save it as UTF-8 (it may be Latin-1 or Windows-1252)`;
  }
}

/** A whole file's bytes as text (see InputDecoder). */
export function decodeInput(bytes) {
  const decoder = new InputDecoder();
  return decoder.write(bytes) + decoder.end();
}
