// The one command-line parser of Belay's command lines (belay, cueme, npm start): node:util's
// parseArgs, with `--help`/`-h` understood everywhere and every mistake turned into a one-line
// UsageError that names the option, in our words rather than Node's.
import { parseArgs, type ParseArgsOptionsConfig } from 'node:util';
import { errorMessage } from './errors.ts';

/** A mistake in how a command was called: reported on stderr in one line, exit code 2. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** Whether `--help` or `-h` is among the arguments (before a `--`): help wins over everything else. */
export function wantsHelp(args: readonly string[]): boolean {
  for (const arg of args) {
    if (arg === '--') return false;
    if (arg === '--help' || arg === '-h') return true;
  }
  return false;
}

/**
 * Splits off the action of a command that has actions (`belay blocks parse ...`); throws UsageError
 * when the first argument is not one of `actions`. `action` is undefined when nothing was given.
 */
export function splitAction<const A extends string>(args: readonly string[], actions: readonly A[]): { action: A | undefined; rest: string[] } {
  const [first, ...rest] = args;
  if (first === undefined) return { action: undefined, rest };
  if (!(actions as readonly string[]).includes(first)) {
    const choices = actions.length > 1 ? `${actions.slice(0, -1).join(', ')} or ${actions.at(-1)}` : String(actions[0]);
    throw new UsageError(first.startsWith('-') ? `Unknown option '${first}' where the action goes; use ${choices} (see --help)` : `unknown action '${first}'; use ${choices} (see --help)`);
  }
  return { action: first as A, rest };
}

interface Strict<T extends ParseArgsOptionsConfig> {
  args: string[];
  options: T;
  allowPositionals: true;
  strict: true;
}

type Parsed<T extends ParseArgsOptionsConfig> = ReturnType<typeof parseArgs<Strict<T>>>;

/** The option values and the positional arguments. */
export interface CommandLine<T extends ParseArgsOptionsConfig> {
  values: Parsed<T>['values'];
  positionals: string[];
}

export interface CommandLineRules {
  /** Whether arguments other than options are taken (default true). */
  positionals?: boolean;
}

/**
 * Parses `args` against `options`. Throws UsageError for an unknown option, a missing value, a
 * value given to a flag, or an argument where none is taken. Ask `wantsHelp` first: help is not
 * an option here.
 */
export function parseCommandLine<const T extends ParseArgsOptionsConfig>(args: readonly string[], options: T, rules: CommandLineRules = {}): CommandLine<T> {
  const { tokens } = parseArgs({ args: [...args], options, strict: false, allowPositionals: true, tokens: true });
  for (const token of tokens) {
    if (token.kind === 'option-terminator') continue;
    if (token.kind === 'positional') {
      if (rules.positionals === false) throw new UsageError(`unexpected argument '${token.value}': this command takes options only`);
      continue;
    }
    const spec = Object.hasOwn(options, token.name) ? options[token.name] : undefined;
    if (!spec) throw new UsageError(`Unknown option '${token.rawName}'`);
    if (spec.type === 'boolean' && token.inlineValue) throw new UsageError(`option '${token.rawName}' takes no value`);
    if (spec.type === 'string') {
      if (token.value === undefined) throw new UsageError(`option '${token.rawName}' needs a value`);
      // As Node's strict mode does: `--text -x` is more likely a forgotten value than a value.
      if (!token.inlineValue && token.value.length > 1 && token.value.startsWith('-')) {
        throw new UsageError(`option '${token.rawName}' needs a value, got the option-like '${token.value}' (write ${token.rawName}=${token.value} if that is the value)`);
      }
    }
  }
  try {
    const { values, positionals } = parseArgs({ args: [...args], options, strict: true, allowPositionals: true });
    return { values, positionals };
  } catch (error) {
    // Checked above; whatever is left is still said in one line.
    throw new UsageError(errorMessage(error).split(/\.( |$)/, 1)[0]!);
  }
}
