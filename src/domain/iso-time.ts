/**
 * Epoch milliseconds as the ISO 8601 text `Date#toISOString` gives (`2024-06-01T12:00:00.000Z`),
 * for the API's timestamps. Listings format several per row, and building a Date for each cost
 * more than the rest of the row's API object; whole milliseconds in years 1970–9999 are formatted
 * here by arithmetic, anything else (fractions, earlier or later years) by Date, so the text is
 * always the same.
 */
const DAY_MS = 86_400_000;
/** 10000-01-01T00:00:00.000Z: from here toISOString writes a six-digit signed year. */
const YEAR_10000_MS = 253_402_300_800_000;

const pad2 = (n: number) => (n < 10 ? `0${n}` : `${n}`);
const pad3 = (n: number) => (n < 10 ? `00${n}` : n < 100 ? `0${n}` : `${n}`);

export function isoTime(ms: number): string {
  if (!Number.isInteger(ms) || ms < 0 || ms >= YEAR_10000_MS) return new Date(ms).toISOString();
  const days = Math.floor(ms / DAY_MS);
  let rest = ms - days * DAY_MS;
  const hours = Math.floor(rest / 3_600_000);
  rest -= hours * 3_600_000;
  const minutes = Math.floor(rest / 60_000);
  rest -= minutes * 60_000;
  const seconds = Math.floor(rest / 1000);
  // Civil date from days since 1970-01-01 (the proleptic Gregorian calendar Date uses): eras
  // of 400 years starting on March 1st, so a leap day is the last day of its year.
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const doe = z - era * 146_097;
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365);
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
  const mp = Math.floor((5 * doy + 2) / 153);
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0);
  return `${year}-${pad2(month)}-${pad2(day)}T${pad2(hours)}:${pad2(minutes)}:${pad2(seconds)}.${pad3(rest - seconds * 1000)}Z`;
}

export function isoTimeOrNull(ms: number | null): string | null {
  return ms === null ? null : isoTime(ms);
}
