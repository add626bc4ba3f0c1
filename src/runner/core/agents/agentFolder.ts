// The agent's folder: what an isolated agent is shown of the host (read-only), found from the
// program its command names. The program is the command's first word when it is a path
// (`./agent`, `/opt/a/run.sh`), or the script a known interpreter runs (`python3 a.py`,
// `node dist/a.js`, `bash run.sh`, `uv run a.py`, `npx tsx a.ts`, `deno run a.ts`, …), named
// absolutely or relative to a base folder (where Belay was started; a micro-agent's workspace).
// Its folder is the agent's folder by default, else the base folder. The home folder, `/`, and
// any folder that holds a task or the run records are never shown whole: Belay narrows to the
// program's folder or refuses in one line naming the option that sets the folder.
import { existsSync, realpathSync, statSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

/** A word of the command as written, with where it is in the text (to put an absolute path in its place). */
interface Word {
  text: string;
  start: number;
  end: number;
  /** false when the shell would change it ($, backquotes, globs, ~, braces, escapes): never taken as a path. */
  plain: boolean;
}

/**
 * The words of the command's first simple command (up to `;`, `&&`, `|`, a redirection …),
 * unquoted. Undefined when its quotes do not close.
 */
function firstCommandWords(command: string): Word[] | undefined {
  const words: Word[] = [];
  let i = 0;
  while (i < command.length) {
    while (i < command.length && /\s/.test(command[i]!)) i++;
    if (i >= command.length || /[;&|()<>]/.test(command[i]!)) break;
    const start = i;
    let text = '';
    let plain = true;
    while (i < command.length && !/[\s;&|()<>]/.test(command[i]!)) {
      const c = command[i]!;
      if (c === "'") {
        const close = command.indexOf("'", i + 1);
        if (close < 0) return undefined;
        text += command.slice(i + 1, close);
        i = close + 1;
      } else if (c === '"') {
        const close = command.indexOf('"', i + 1);
        if (close < 0) return undefined;
        const inner = command.slice(i + 1, close);
        if (/[$`\\]/.test(inner)) plain = false;
        text += inner;
        i = close + 1;
      } else {
        if (/[$`\\*?[{}~]/.test(c)) plain = false;
        text += c;
        i++;
      }
    }
    words.push({ text, start, end: i, plain });
  }
  return words;
}

/** Interpreters whose first argument that is not an option is the script they run. */
const INTERPRETERS = /^(python[0-9.]*|pypy[0-9.]*|node|nodejs|bun|deno|tsx|ts-node|bash|sh|dash|zsh|ksh|ruby|perl|php|lua|Rscript)$/;
/** Options of those interpreters that take a value (skipped with it). */
const OPTIONS_WITH_VALUE = new Set(['-W', '-X', '-r', '--require', '--import', '--loader', '--experimental-loader', '--env-file', '-I', '--config']);
/** Options after which no script comes (code or a module is named instead). */
const NO_SCRIPT = new Set(['-c', '-m', '-e', '--eval', '-p', '--print', '-']);

/** The word that names the program: a path as the first word, or the script of a known interpreter. */
function programWord(words: readonly Word[]): Word | undefined {
  let i = 0;
  // Variables set for the command, and `env`/`exec`/`uv run`/`npx`/`deno run`/`bun run` before the real program.
  while (i < words.length) {
    const w = words[i]!.text;
    if (/^[A-Za-z_][A-Za-z0-9_]*=/.test(w)) i++;
    else if (w === 'env' || w === 'exec' || w === 'npx' || w === 'pnpx' || w === 'uvx') i++;
    else if ((w === 'uv' || w === 'deno' || w === 'bun' || w === 'poetry' || w === 'pipenv') && words[i + 1]?.text === 'run') i += 2;
    else break;
  }
  // `npx --yes tsx a.ts`, `uv run --with x a.py`: their own options first.
  while (i < words.length && words[i]!.text.startsWith('-')) i += OPTIONS_WITH_VALUE.has(words[i]!.text) || words[i]!.text === '--with' ? 2 : 1;
  const first = words[i];
  if (!first) return undefined;
  // An interpreter may be named by its path too (`/usr/bin/python3 a.py`): its script is the program.
  const name = path.posix.basename(first.text);
  if (!INTERPRETERS.test(name)) {
    if (first.text.includes('/')) return first;
    // `uv run a.py`, `npx a.ts`: a script named without an interpreter.
    return /\.(py|js|mjs|cjs|ts|mts|sh|rb|pl)$/.test(first.text) ? first : undefined;
  }
  for (let j = i + 1; j < words.length; j++) {
    const w = words[j]!.text;
    if (NO_SCRIPT.has(w) || /^-[A-Za-z]*[cme]$/.test(w) && w.length <= 3 && !w.startsWith('--')) return undefined;
    if (w === '--') return words[j + 1];
    if (OPTIONS_WITH_VALUE.has(w)) {
      j++;
      continue;
    }
    if (w.startsWith('-')) continue;
    // `deno run a.ts`, `bun run a.ts` (deno/bun named as interpreters), `node --inspect a.js`.
    if ((name === 'deno' || name === 'bun') && w === 'run') continue;
    return words[j];
  }
  return undefined;
}

export interface AgentProgram {
  /** The program as the command names it. */
  named: string;
  /** Its absolute path (resolved against the base folder when relative). */
  path: string;
  /** The command with a relative program replaced by its absolute path (shell-quoted). */
  command: string;
}

/** The program the command names (see the top of the file), or undefined when it names none Belay can tell. */
export function agentProgram(command: string, base: string): AgentProgram | undefined {
  const words = firstCommandWords(command);
  const word = words && programWord(words);
  if (!word || word.text === '' || !word.plain) return undefined;
  const absolute = path.resolve(base, word.text);
  const rewritten = path.isAbsolute(word.text) ? command : `${command.slice(0, word.start)}${quote(absolute)}${command.slice(word.end)}`;
  return { named: word.text, path: absolute, command: rewritten };
}

function quote(text: string): string {
  return /^[A-Za-z0-9_@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

function realOr(dir: string): string {
  try {
    return realpathSync(dir);
  } catch {
    return path.resolve(dir);
  }
}

function inside(child: string, parent: string): boolean {
  const relative = path.relative(parent, child);
  return relative === '' || (!relative.startsWith('..') && !path.isAbsolute(relative));
}

export interface AgentFolderOptions {
  command: string;
  /** Where relative paths are resolved: where Belay was started (a micro-agent: its workspace). */
  base: string;
  /** The folder the user gave (--agent-dir, the agent's cwd setting), when they did. */
  given?: string | undefined;
  /** Paths never shown to the agent: task folders, the run records. */
  hidden?: readonly string[];
  /** The option that sets the folder, as the user would give it ("--agent-dir DIR"). */
  option: string;
  /** false for the local backend: nothing is shown, so only the program's presence is checked. */
  isolated?: boolean;
  home?: string;
}

export interface AgentFolder {
  /** The folder shown to the agent (read-only) and where it starts. */
  dir: string;
  /** The command to run: the program named by its absolute path when it was relative. */
  command: string;
  program: AgentProgram | undefined;
  /** What Belay decided that the user should know (a narrowed folder), in one line. */
  notice?: string;
}

/** Thrown with one line naming the path and the option: the agent would not find its program, or would see too much. */
export class AgentFolderError extends Error {}

/**
 * Why a folder may not be shown at all, or undefined when it may: `/` and the home folder (or a
 * folder holding it). A folder that holds tasks or run records is shown with those masked (empty).
 */
function tooMuch(dir: string, home: string): string | undefined {
  const real = realOr(dir);
  if (real === '/') return 'is /';
  if (inside(home, real)) return real === home ? 'is your home folder' : 'holds your home folder';
  return undefined;
}

/**
 * The agent's folder and command: the given folder, else the program's folder, else the base
 * folder, never one that shows too much. Throws AgentFolderError when no folder may be shown, or
 * when the program would not be visible inside (outside the folder, or in a hidden one).
 */
export function resolveAgentFolder(options: AgentFolderOptions): AgentFolder {
  const home = realOr(options.home ?? os.homedir());
  const hidden = options.hidden ?? [];
  const given = options.given !== undefined ? path.resolve(options.base, options.given) : undefined;
  // The agent starts in its folder: with one given, a relative program is named from there.
  const program = agentProgram(options.command, given ?? options.base);
  const command = program?.command ?? options.command;
  let dir: string;
  let notice: string | undefined;
  if (given !== undefined) {
    dir = given;
    const why = options.isolated === false ? undefined : tooMuch(dir, home);
    if (why) throw new AgentFolderError(`the agent's folder ${dir} ${why}, which is never shown whole to the agent: give ${options.option} a folder of the agent's own`);
  } else {
    const programDir = program && existsSync(program.path) ? path.dirname(program.path) : undefined;
    dir = programDir ?? options.base;
    const why = options.isolated === false ? undefined : tooMuch(dir, home);
    if (why) {
      throw new AgentFolderError(
        programDir
          ? `the agent's program ${program!.path} lies in ${dir}, which ${why} and is never shown whole to the agent: move the program into a folder of its own, or give ${options.option}`
          : `the agent's folder would be ${dir}, which ${why} and is never shown whole to the agent: give ${options.option} (a folder holding only the agent)`,
      );
    }
    if (programDir && realOr(programDir) !== realOr(options.base)) notice = `the agent's folder is ${programDir}, its program's (${options.option} sets another)`;
  }
  if (program) checkVisible(program, dir, options.isolated === false ? undefined : hidden, options.option);
  return { dir, command, program, ...(notice ? { notice } : {}) };
}

/** Reports a program the agent would not find inside, before it starts. */
function checkVisible(program: AgentProgram, dir: string, hidden: readonly string[] | undefined, option: string): void {
  if (!existsSync(program.path)) {
    throw new AgentFolderError(`the agent's program ${program.path} does not exist (the command names '${program.named}'): name it by its path, or give ${option} the folder it is in`);
  }
  const real = realOr(program.path);
  if (statSync(real).isDirectory()) throw new AgentFolderError(`the agent's program ${program.path} is a folder, not a program`);
  // Unisolated, the agent reads every file: being there is enough.
  if (hidden === undefined) return;
  const shownDir = realOr(dir);
  if (!inside(real, shownDir)) {
    throw new AgentFolderError(`the agent's program ${program.path} is outside the agent's folder ${dir}, so the agent would not find it: give ${option} ${path.dirname(program.path)}`);
  }
  const masked = hidden.find((h) => inside(real, realOr(h)));
  if (masked) throw new AgentFolderError(`the agent's program ${program.path} lies in ${masked}, which the agent must not see (tasks, run records): move the program out, then give ${option}`);
}

/**
 * A micro-agent's folder (nanobot: `belay nanobot`, the editor's chat): the one given, else its
 * program's (named from its workspace, where it runs), else `cwd`. Its workspace is shown to it
 * writable, so a program inside it is visible whatever the folder. Throws AgentFolderError as
 * `resolveAgentFolder` does.
 */
export function resolveMicroAgentFolder(options: { command: string; workspace: string; cwd: string; given?: string | undefined; isolated: boolean; option?: string; home?: string }): string {
  const option = options.option ?? '--agent-dir DIR';
  const home = realOr(options.home ?? os.homedir());
  const given = options.given !== undefined ? path.resolve(options.cwd, options.given) : undefined;
  const program = agentProgram(options.command, options.workspace);
  const programDir = program && existsSync(program.path) && !statSync(program.path).isDirectory() ? path.dirname(program.path) : undefined;
  const dir = given ?? programDir ?? options.cwd;
  if (!options.isolated) return dir;
  const why = tooMuch(dir, home);
  if (why) {
    throw new AgentFolderError(
      given === undefined && programDir
        ? `the micro-agent's program ${program!.path} lies in ${dir}, which ${why} and is never shown whole to it: move the program into a folder of its own, or give ${option}`
        : `the micro-agent's folder ${dir} ${why}, which is never shown whole to it: give ${option} (a folder holding only the bot's program)`,
    );
  }
  if (program) {
    if (!existsSync(program.path)) throw new AgentFolderError(`the micro-agent's program ${program.path} does not exist (its command names '${program.named}', from its workspace ${options.workspace}): name it by its path, or give ${option}`);
    const real = realOr(program.path);
    if (!inside(real, realOr(dir)) && !inside(real, realOr(options.workspace))) {
      throw new AgentFolderError(`the micro-agent's program ${program.path} is outside its folder ${dir} and its workspace, so it would not find it: give ${option} ${path.dirname(program.path)}`);
    }
  }
  return dir;
}
