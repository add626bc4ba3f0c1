/** POSIX shell quoting: one word for `sh`, whatever the text holds (quotes, spaces, `$`, newlines). */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

/** Several words, each quoted, joined with spaces: a command line `sh -c` runs as these arguments. */
export function shellJoin(words: readonly string[]): string {
  return words.map(shellQuote).join(' ');
}
