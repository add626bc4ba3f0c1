// Run ids and job ids begin with the time to the second (`20260105T100000Z-…`), and the views list
// the newest first by that stamp: an id made after another sorts after it only once the clock has
// left the other's second. Tests wait for that instant, not for a guessed second and a bit.
import { setTimeout as delay } from 'node:timers/promises';

/** The end of the second an id's time stamp names, in ms since the epoch. */
export function endOfSecondOf(id: string): number {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z/.exec(id);
  if (!m) throw new Error(`'${id}' does not begin with a time stamp (YYYYMMDDTHHMMSSZ)`);
  const [, year, month, day, hour, minute, second] = m.map(Number) as [number, number, number, number, number, number, number];
  return Date.UTC(year, month - 1, day, hour, minute, second) + 1000;
}

/** Resolves once the clock has left the second `id` was made in: at once if it already has. */
export async function pastSecondOf(id: string): Promise<void> {
  const end = endOfSecondOf(id);
  for (let left = end - Date.now(); left > 0; left = end - Date.now()) await delay(left);
}
