// Type-ahead for the keyboard cursor (keyboard.js owns the cursor, the keys and what is
// said): the first letters of a word move the cursor to the next word on screen starting
// with them, as in a file manager or a listbox. Letters typed within PAUSE_MS of each other
// build one prefix; after a pause a letter starts a new one from where the cursor is; the
// same letter again (a prefix of one repeated letter) goes on to its next match. Words are
// compared folded (fold), so "e" finds "État" and a Hebrew or Arabic letter finds its word
// whatever vowel marks it carries. Plain data in, an index out: no DOM here.
//
// Why a find begins with "/": the page binds single letters and digits everywhere, the
// text area included (a category's key, n and p; going on with n keeps the cursor in the
// text), so a letter cannot both mean "Grammar" and "jump to a word starting with g" by a
// rule the worker cannot see (whether a selection is pending). "/" is the find key of
// Firefox's quick find, less and vim, and no category's (those are letters and digits).
// While a find runs, letters, digits and Backspace refine it and no other part of the page
// sees them; Escape ends it where it is; any other key ends it and does what it always does
// (Enter takes the word found, an arrow moves on from it).

export const PAUSE_MS = 1000;

/** Text as type-ahead compares it: lower case by the language's rules (Turkish İ is i),
 * then compatibility forms unified and marks dropped (NFKD: é is e, a full-width Ａ is a,
 * a Hangul syllable its letters, Arabic and Hebrew vowel points gone). */
export function fold(text, lang) {
  let lower;
  try {
    lower = text.toLocaleLowerCase(lang || undefined);
  } catch {
    lower = text.toLowerCase(); // a tag the browser refuses
  }
  return lower.normalize("NFKD").replace(/\p{M}/gu, "");
}

/** The run after one more key: {from, prefix, last} where `from` is where the search of
 * this prefix starts (the cursor when the run began) and `last` the key's time (ms). A key
 * more than PAUSE_MS after the previous one begins a new run at `cursor`. */
export function extend(run, letter, cursor, now) {
  const fresh = !run || !run.prefix || now - run.last > PAUSE_MS;
  return { from: fresh ? cursor : run.from, prefix: (fresh ? "" : run.prefix) + letter, last: now };
}

/** What to look for and from where: a prefix of one letter typed again and again ("ss")
 * looks for that letter after the cursor (the next match); any other prefix for the first
 * word after the run's start that begins with it (so refining keeps a word that still fits). */
export function target(run, cursor) {
  const letters = [...run.prefix];
  if (letters.length > 1 && letters.every((c) => c === letters[0])) return { prefix: letters[0], from: cursor };
  return { prefix: run.prefix, from: run.from };
}

/** The index of the first of `words` (folded, in reading order) after index `from` that
 * starts with `prefix`, wrapping past the end (the word at `from` comes last): {index,
 * wrapped}, or null when no word starts with it. */
export function nextMatch(words, prefix, from) {
  const n = words.length;
  for (let step = 1; step <= n; step += 1) {
    const index = (from + step) % n;
    if (words[index].startsWith(prefix)) return { index, wrapped: index <= from };
  }
  return null;
}
