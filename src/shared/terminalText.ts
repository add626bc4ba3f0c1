// Text from agents and LLMs (and from the commands they run) is untrusted where a terminal reads
// it: an escape sequence can set the window title, clear the screen, move the cursor over a result
// line, or write the clipboard (OSC 52); a carriage return can overwrite a line; bidirectional
// controls can make text read otherwise than it is. Every such character is shown as a visible
// stand-in instead, so the text reads as what it is and does nothing.

/** C0 controls but tab and line feed, DEL, C1 controls, and the bidirectional controls. */
const UNSAFE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;
const UNSAFE_ALL = new RegExp(UNSAFE.source, 'g');
/** What JSON.stringify leaves raw among them (it escapes C0 itself). */
const UNSAFE_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/g;
/** An SGR sequence (colours, bold): the only escape sequence `keepColours` lets through. */
const SGR = /^\u001b\[[0-9;]{0,32}m/;

function standIn(c: string): string {
  const code = c.charCodeAt(0);
  // Control pictures: ␀ … ␟, and ␡ for DEL; ESC shows as ␛.
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  return `\\u${code.toString(16).padStart(4, '0')}`;
}

export interface NeutraliseOptions {
  /** Keep SGR colour sequences (a terminal that shows a command's colours); default false. */
  keepColours?: boolean;
}

/**
 * `text` safe to print on a terminal: line feeds and tabs stay, a CR LF becomes a line feed, a
 * lone CR a line feed too (it would overwrite the line), and every other control character is a
 * visible stand-in (␛ for ESC, ␇ for BEL, `\u202e` for a bidirectional override…), so that an
 * escape sequence prints as text and does nothing.
 */
export function neutraliseControls(text: string, options: NeutraliseOptions = {}): string {
  if (!UNSAFE.test(text) && !text.includes('\r')) return text;
  const lines = text.replace(/\r\n?/g, '\n');
  if (!options.keepColours) return lines.replace(UNSAFE_ALL, standIn);
  let out = '';
  for (let i = 0; i < lines.length; i++) {
    const c = lines[i]!;
    if (c === '\u001b') {
      const sgr = SGR.exec(lines.slice(i, i + 40));
      if (sgr) {
        out += sgr[0];
        i += sgr[0].length - 1;
        continue;
      }
    }
    out += UNSAFE.test(c) ? standIn(c) : c;
  }
  return out;
}

/**
 * JSON text safe to print on a terminal: what `JSON.stringify` leaves raw of the characters above
 * (DEL, C1 controls, bidirectional controls) is escaped as `\uXXXX`, which parses back to the same
 * value.
 */
export function neutraliseJson(json: string): string {
  return json.replace(UNSAFE_IN_JSON, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}
