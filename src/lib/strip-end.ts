/**
 * Removes trailing characters of a set in one backwards pass. Replaces `s.replace(/[;\s]+$/, '')`
 * style patterns on user input: an unanchored `X+$` retries from every start position, so a long
 * run of X followed by anything else takes quadratic time (a 95 kB query took seconds).
 */
export function stripEnd(s: string, strip: (ch: string) => boolean): string {
  let end = s.length;
  while (end > 0 && strip(s[end - 1]!)) end -= 1;
  return end === s.length ? s : s.slice(0, end);
}

/** JavaScript's notion of whitespace (what `\s` matches), for single characters. */
export function isSpace(ch: string): boolean {
  return ch.trim() === '';
}
