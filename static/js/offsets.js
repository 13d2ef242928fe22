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

/**
 * The converters of many texts, each made the first time it is asked for (`found[i]`): a
 * book-length document's 2,000 tables are not built before its first paint, only those of
 * the segments drawn or marked.
 */
export function converters(texts) {
  const made = [];
  return new Proxy(made, {
    get(target, key) {
      if (typeof key === "string" && /^\d+$/.test(key)) {
        const i = Number(key);
        if (i < texts.length && target[i] === undefined) target[i] = converter(texts[i]);
        return target[i];
      }
      return key === "length" ? texts.length : Reflect.get(target, key);
    },
  });
}

const WORD = /^[\p{L}\p{N}\p{M}]$/u;
const SPACE = /^\s$/u;
const PUNCTUATION = /^[\p{P}\s]*$/u;

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

// Intl.Segmenter (every current browser) knows what a reader sees as one character (an emoji
// with its skin tone or ZWJ family, a letter with its combining marks, a flag) and where
// words end in scripts written without spaces (Chinese, Japanese, Thai). Without it the
// page falls back to surrogate pairs and letter runs.
const SEGMENTERS = new Map();
function segmenter(granularity, lang) {
  if (typeof Intl.Segmenter !== "function") return null;
  const key = `${granularity}:${lang || ""}`;
  if (!SEGMENTERS.has(key)) {
    let made;
    try {
      made = new Intl.Segmenter(lang || undefined, { granularity });
    } catch {
      made = new Intl.Segmenter(undefined, { granularity }); // a tag the browser refuses
    }
    SEGMENTERS.set(key, made);
  }
  return SEGMENTERS.get(key);
}

const BOUNDARIES = new Map(); // `${granularity}\u0000${lang}\u0000${text}` -> Set of UTF-16 indices
function boundaries(text, granularity, lang) {
  const key = `${granularity}\u0000${lang || ""}\u0000${text}`;
  let found = BOUNDARIES.get(key);
  if (!found) {
    const seg = segmenter(granularity, lang);
    found = new Set([0, text.length]);
    if (seg) for (const piece of seg.segment(text)) found.add(piece.index);
    if (BOUNDARIES.size > 500) BOUNDARIES.clear();
    BOUNDARIES.set(key, found);
  }
  return found;
}

/** Widen a UTF-16 range so that it never cuts a character a reader sees as one. */
export function snapToGraphemes(text, start, end) {
  if (splitsPair(text, start)) start -= 1;
  if (splitsPair(text, end)) end += 1;
  if (!segmenter("grapheme")) return { start, end };
  const edges = boundaries(text, "grapheme");
  while (start > 0 && !edges.has(start)) start -= 1;
  while (end < text.length && !edges.has(end)) end += 1;
  return { start, end };
}

/**
 * Snap a UTF-16 range to whole words: trim surrounding white space, then widen a start or
 * end that falls inside a word to the word's edge (a word: letters, digits and marks, cut
 * where the browser's word segmenter cuts, e.g. between two Chinese words). Never cuts a
 * grapheme. Returns {start, end} or null if empty.
 */
export function snapToWords(text, start, end, lang) {
  start = Math.max(0, Math.min(start, text.length));
  end = Math.max(start, Math.min(end, text.length));
  ({ start, end } = snapToGraphemes(text, start, end));
  while (start < end && SPACE.test(charAt(text, start))) start += charAt(text, start).length;
  while (end > start && SPACE.test(charBefore(text, end))) end -= charBefore(text, end).length;
  if (start >= end) return null;
  const cuts = segmenter("word", lang) ? boundaries(text, "word", lang) : new Set();
  const inside = (i) => !cuts.has(i) && isWord(charBefore(text, i)) && isWord(charAt(text, i));
  while (start > 0 && inside(start)) start -= charBefore(text, start).length;
  while (end < text.length && inside(end)) end += charAt(text, end).length;
  return snapToGraphemes(text, start, end);
}

/**
 * The stops of the keyboard cursor in a text: its words (as the browser's word segmenter
 * cuts them) and its other visible characters but punctuation (an emoji, a symbol), as
 * UTF-16 {start, end}, in reading order.
 */
export function wordStops(text, lang) {
  const seg = segmenter("word", lang);
  const stops = [];
  if (seg) {
    for (const piece of seg.segment(text)) {
      if (piece.isWordLike || !PUNCTUATION.test(piece.segment)) {
        stops.push({ start: piece.index, end: piece.index + piece.segment.length });
      }
    }
    return stops;
  }
  const re = /[\p{L}\p{N}\p{M}]+|[^\p{L}\p{N}\p{M}\p{P}\s]+/gu;
  for (const m of text.matchAll(re)) stops.push({ start: m.index, end: m.index + m[0].length });
  return stops;
}

const ABBREVIATIONS = new Set([
  "mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "mt", "vs", "etc", "no", "gen", "capt",
  "col", "lt", "sgt", "rev", "hon", "fr", "sen", "rep", "gov", "pres", "lord", "lady",
]);

// A sentence ends at . ! ? … (and the Arabic ؟ and Urdu ۔) followed by white space, or at
// the full-width 。！？ of Chinese and Japanese, which need none; closing quotes and brackets
// stay with the sentence they close.
const SENTENCE_END = /[.!?…؟۔]+["'”’»)\]]*(\s+)|[。！？]+[」』”’）)\]]*(\s*)/gu;

/** Sentence ranges [start, end) in UTF-16 units, trailing white space excluded. */
export function sentences(text) {
  const out = [];
  const re = new RegExp(SENTENCE_END.source, "gu");
  let begin = 0;
  let match;
  while ((match = re.exec(text))) {
    const gap = match[1] ?? match[2] ?? "";
    const stop = match.index + match[0].length - gap.length;
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
