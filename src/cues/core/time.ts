/** Local time as ISO-8601 with its offset (`2026-11-22T07:18:17.632+00:00`), as the public cueme writes it. */
export function localIsoWithOffset(date: Date = new Date()): string {
  const pad = (n: number, width = 2) => String(Math.trunc(Math.abs(n))).padStart(width, '0');
  const offsetMinutes = -date.getTimezoneOffset();
  const sign = offsetMinutes >= 0 ? '+' : '-';
  return (
    `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}` +
    `T${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}.${pad(date.getMilliseconds(), 3)}` +
    `${sign}${pad(offsetMinutes / 60)}:${pad(offsetMinutes % 60)}`
  );
}

const NAIVE = /^(\d{4})-(\d{2})-(\d{2})[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?$/;

/**
 * Milliseconds since the epoch of a mailbox timestamp: ISO-8601 with an offset or `Z` (cueme,
 * cue-console), or a naive `YYYY-MM-DD HH:MM:SS.ffffff` (cuemcp), read as local time. Undefined
 * when the text is none of these, so callers can sort unknown times last instead of crashing.
 */
export function parseMailboxTime(text: unknown): number | undefined {
  if (typeof text === 'number' && Number.isFinite(text)) return text > 1e12 ? text : text * 1000;
  if (typeof text !== 'string' || text.trim() === '') return undefined;
  const value = text.trim();
  const naive = NAIVE.exec(value);
  if (naive) {
    const [, y, mo, d, h, mi, s, frac] = naive;
    const ms = frac ? Number(frac.slice(0, 3).padEnd(3, '0')) : 0;
    const t = new Date(Number(y), Number(mo) - 1, Number(d), Number(h), Number(mi), Number(s ?? 0), ms).getTime();
    return Number.isFinite(t) ? t : undefined;
  }
  // Date.parse accepts at most milliseconds on some engines: trim longer fractions first.
  const t = Date.parse(value.replace(/(\.\d{3})\d+/, '$1').replace(' ', 'T'));
  return Number.isFinite(t) ? t : undefined;
}

/** "2m 10s", "45s", "3h 5m": how long a cue has waited, as the panel and `belay cues list` show it. */
export function formatAge(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const h = Math.floor(total / 3600);
  const m = Math.floor((total % 3600) / 60);
  const s = total % 60;
  if (h > 0) return `${h}h ${m}m`;
  if (m > 0) return `${m}m ${s}s`;
  return `${s}s`;
}
