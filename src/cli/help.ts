// Help text made from descriptions held elsewhere (the runner's protocol and backend tables),
// wrapped as the hand-written help around it is: options in a column, text from column 28.

/** Where an option's text starts in `belay run --help`, and the longest line. */
const COLUMN = 27;
const WIDTH = 97;

/** `text` wrapped at word boundaries into lines indented to the option column. */
export function helpLines(text: string, indent = COLUMN, width = WIDTH): string {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(/\s+/).filter(Boolean)) {
    if (line && indent + line.length + 1 + word.length > width) {
      lines.push(line);
      line = word;
    } else line = line ? `${line} ${word}` : word;
  }
  if (line) lines.push(line);
  return lines.map((l) => `${' '.repeat(indent)}${l}`).join('\n');
}
