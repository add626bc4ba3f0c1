// The task file parsers (TOML for task.toml, YAML for task.yaml). The libraries are large, so
// task.ts loads this module on the first task it reads, never when the extension activates.
import { parse as parseTomlDocument, TomlError } from 'smol-toml';
import { parse as parseYamlDocument, YAMLError } from 'yaml';

/** The first line of a parser's message, without the snippet the libraries append. */
function firstLine(message: string): string {
  return (message.split('\n')[0] ?? '').trim();
}

/** Parses task.toml; a syntax error says the line and column, then what was wrong. */
export function parseTaskToml(text: string): unknown {
  try {
    return parseTomlDocument(text);
  } catch (error) {
    if (!(error instanceof TomlError)) throw error;
    const what = firstLine(error.message).replace(/^Invalid TOML document:\s*/, '');
    throw new Error(`line ${error.line}, column ${error.column}: ${what}`);
  }
}

/** Parses task.yaml (one document, unique keys); a syntax error says the line and column. */
export function parseTaskYaml(text: string): unknown {
  try {
    return parseYamlDocument(text, { uniqueKeys: true, maxAliasCount: 50 });
  } catch (error) {
    if (!(error instanceof YAMLError)) throw error;
    const at = error.linePos?.[0];
    const what = firstLine(error.message).replace(/ at line \d+, column \d+:?$/, '');
    throw new Error(at ? `line ${at.line}, column ${at.col}: ${what}` : what);
  }
}
