// Offsets: the API speaks Unicode code points (Python's text[start:end]); JavaScript strings
// are indexed in UTF-16 code units. Everything crossing the wire goes through these helpers.

/** Number of code points in a string. */
export function cpLength(text) {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < text.length) {
      const d = text.charCodeAt(i + 1);
      if (d >= 0xdc00 && d <= 0xdfff) i++;
    }
    n++;
  }
  return n;
}

/** UTF-16 index -> code-point offset. */
export function utf16ToCp(text, index) {
  return cpLength(text.slice(0, Math.max(0, Math.min(index, text.length))));
}

/** Code-point offset -> UTF-16 index (clamped to the string). */
export function cpToUtf16(text, cp) {
  let i = 0;
  let n = 0;
  while (n < cp && i < text.length) {
    const c = text.codePointAt(i);
    i += c > 0xffff ? 2 : 1;
    n++;
  }
  return i;
}

/** A converter for one text, with a precomputed table (for many conversions). */
export function converter(text) {
  const table = [0];
  for (let i = 0; i < text.length; ) {
    i += text.codePointAt(i) > 0xffff ? 2 : 1;
    table.push(i);
  }
  return {
    length: table.length - 1,
    toUtf16: (cp) => table[Math.max(0, Math.min(cp, table.length - 1))],
    toCp: (u) => utf16ToCp(text, u),
  };
}

const WORD = /^[\p{L}\p{N}\p{M}]$/u;
const SPACE = /^\s$/u;

function charAt(text, i) {
  const c = text.codePointAt(i);
  return c === undefined ? "" : String.fromCodePoint(c);
}

function charBefore(text, i) {
  if (i <= 0) return "";
  const low = text.charCodeAt(i - 1);
  if (low >= 0xdc00 && low <= 0xdfff && i >= 2) {
    const high = text.charCodeAt(i - 2);
    if (high >= 0xd800 && high <= 0xdbff) return text.slice(i - 2, i);
  }
  return text[i - 1];
}

const isWord = (ch) => ch !== "" && WORD.test(ch);

/** True when UTF-16 index i falls between the two halves of a surrogate pair. */
export function splitsPair(text, i) {
  if (i <= 0 || i >= text.length) return false;
  const high = text.charCodeAt(i - 1);
  const low = text.charCodeAt(i);
  return high >= 0xd800 && high <= 0xdbff && low >= 0xdc00 && low <= 0xdfff;
}

/**
 * Snap a UTF-16 range to whole words: trim surrounding white space, then widen a start or
 * end that falls inside a word to the word's edge. Returns {start, end} or null if empty.
 */
export function snapToWords(text, start, end) {
  start = Math.max(0, Math.min(start, text.length));
  end = Math.max(start, Math.min(end, text.length));
  // Never split a surrogate pair.
  if (splitsPair(text, start)) start -= 1;
  if (splitsPair(text, end)) end += 1;
  while (start < end && SPACE.test(charAt(text, start))) start += charAt(text, start).length;
  while (end > start && SPACE.test(charBefore(text, end))) end -= charBefore(text, end).length;
  if (start >= end) return null;
  while (start > 0 && isWord(charBefore(text, start)) && isWord(charAt(text, start))) {
    start -= charBefore(text, start).length;
  }
  while (end < text.length && isWord(charBefore(text, end)) && isWord(charAt(text, end))) {
    end += charAt(text, end).length;
  }
  return { start, end };
}

const ABBREVIATIONS = new Set([
  "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt", "vs", "etc", "no", "gen", "capt",
  "col", "lt", "sgt", "rev", "hon", "fr", "sen", "rep", "gov", "pres", "lord", "lady",
]);

/** Sentence ranges [start, end) in UTF-16 units, trailing white space excluded. */
export function sentences(text) {
  const out = [];
  const re = /[.!?…]+["'”’)\]]*(\s+)/gu;
  let begin = 0;
  let match;
  while ((match = re.exec(text))) {
    const stop = match.index + match[0].length - match[1].length;
    const before = text.slice(begin, match.index);
    const lastWord = (before.match(/([\p{L}]+)$/u) || ["", ""])[1];
    const abbreviated =
      match[0].startsWith(".") &&
      (ABBREVIATIONS.has(lastWord.toLowerCase()) || /^\p{Lu}$/u.test(lastWord));
    if (abbreviated) continue;
    if (stop > begin) out.push({ start: begin, end: stop });
    begin = match.index + match[0].length;
  }
  if (begin < text.length) out.push({ start: begin, end: text.length });
  return out
    .map((s) => {
      let { start, end } = s;
      while (start < end && SPACE.test(text[start])) start++;
      while (end > start && SPACE.test(text[end - 1])) end--;
      return { start, end };
    })
    .filter((s) => s.end > s.start);
}

/** Widen a UTF-16 range to the whole sentence(s) it touches. */
export function snapToSentence(text, start, end) {
  const all = sentences(text);
  if (all.length === 0) return null;
  const last = Math.max(start, end - 1);
  const first = all.find((s) => start < s.end) || all[all.length - 1];
  const final = [...all].reverse().find((s) => last >= s.start) || first;
  return { start: Math.min(first.start, final.start), end: Math.max(first.end, final.end) };
}
