/**
 * RFC 3339 datetime parsing to epoch milliseconds, shaped like Qdrant's DateTimePayloadType parser:
 * a full RFC 3339 timestamp, or the relaxed forms Qdrant also accepts (space instead of `T`, no
 * seconds, no offset = UTC, date only = midnight UTC). Fractions below a millisecond are truncated.
 */
const RE = /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?\s*(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)?)?$/;

const DAYS_IN_MONTH = [31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];

/** Epoch milliseconds, or null when `s` is not a datetime. */
export function parseDatetimeMs(s: string): number | null {
  const m = RE.exec(s);
  if (m === null) return null;
  const year = +m[1]!;
  const month = +m[2]!;
  const day = +m[3]!;
  if (month < 1 || month > 12 || day < 1) return null;
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  if (day > (month === 2 && leap ? 29 : DAYS_IN_MONTH[month - 1]!)) return null;
  const hour = m[4] === undefined ? 0 : +m[4];
  const minute = m[5] === undefined ? 0 : +m[5];
  const second = m[6] === undefined ? 0 : +m[6];
  // Second 60 is a leap second in RFC 3339; it lands on the next minute like chrono does.
  if (hour > 23 || minute > 59 || second > 60) return null;
  const ms = m[7] === undefined ? 0 : +(m[7] + "00").slice(0, 3);
  let offsetMin = 0;
  if (m[9] !== undefined) {
    const oh = +m[10]!;
    const om = m[11] === undefined ? 0 : +m[11];
    if (oh > 23 || om > 59) return null;
    offsetMin = (m[9] === "-" ? -1 : 1) * (oh * 60 + om);
  }
  const t = Date.UTC(year, month - 1, day, hour, minute, second, ms);
  // Date.UTC maps years 0..99 to 1900..1999; fix those explicitly.
  const fixed = year < 100 ? new Date(t).setUTCFullYear(year) : t;
  return fixed - offsetMin * 60_000;
}
