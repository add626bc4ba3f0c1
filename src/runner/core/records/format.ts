// How a run reads in the agent terminal and in Test Explorer: RunEvents to text with ANSI
// colours.
// Agent text and command output are untrusted: escape sequences in them are neutralised so an
// agent cannot clear the screen, move the cursor or fake a result line.
import { neutraliseControls } from '../../../shared/terminalText.ts';
import { SIGNAL_WORDS } from './signalWords.ts';
import type { RunEvent } from './events.ts';
import type { LlmUsage, RunResult } from './records.ts';

const ESC = '\x1b[';
export const ansi = {
  bold: (s: string) => `${ESC}1m${s}${ESC}0m`,
  dim: (s: string) => `${ESC}2m${s}${ESC}0m`,
  red: (s: string) => `${ESC}31m${s}${ESC}0m`,
  green: (s: string) => `${ESC}32m${s}${ESC}0m`,
  yellow: (s: string) => `${ESC}33m${s}${ESC}0m`,
  blue: (s: string) => `${ESC}34m${s}${ESC}0m`,
  cyan: (s: string) => `${ESC}36m${s}${ESC}0m`,
  magenta: (s: string) => `${ESC}35m${s}${ESC}0m`,
};

/**
 * Untrusted text made safe for a terminal: SGR colour sequences are kept (commands' colours are
 * part of their output), every other escape or control character is shown as a visible symbol
 * (the one rule for all of Belay, src/shared/terminalText.ts).
 */
export function sanitizeTerminalText(text: string): string {
  return neutraliseControls(text, { keepColours: true });
}

function indent(text: string, prefix: string): string {
  return text
    .replace(/\n$/, '')
    .split('\n')
    .map((line) => prefix + line)
    .join('\n');
}

export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  return `${minutes} min ${Math.round((ms % 60_000) / 1000)} s`;
}

/** Human words for the failure causes. */
export const CAUSE_WORDS: Record<string, string> = {
  agent_timeout: 'the agent ran out of time',
  test_timeout: 'the tests ran out of time',
  parse_error: 'the agent answered with something that is not the protocol',
  agent_error: 'the agent failed',
  max_steps: 'the agent used up its steps',
  tests_failed: 'the tests failed',
  setup_error: 'the run could not be set up',
  aborted: 'the run was stopped',
  disk_budget: 'the run wrote more than its disk budget',
  harness_error: 'Belay itself failed',
  budget_exceeded: 'the agent spent its LLM budget',
  host_lost: 'the engine host stopped answering',
};

/** "3 requests · 12.4k tokens (10.1k in, 2.3k out) · $0.0421": what model calls cost. */
export function llmLine(usage: LlmUsage): string {
  const total = usage.input_tokens + usage.output_tokens;
  return `${usage.requests} request${usage.requests === 1 ? '' : 's'} · ${formatTokens(total)} tokens (${formatTokens(usage.input_tokens)} in, ${formatTokens(usage.output_tokens)} out) · ${formatUsd(usage.cost_usd)}`;
}

/** 950, 12.4k, 3.10M. */
export function formatTokens(n: number): string {
  if (n < 1000) return String(Math.round(n));
  if (n < 1_000_000) return `${(n / 1000).toFixed(n < 10_000 ? 2 : 1)}k`;
  return `${(n / 1_000_000).toFixed(2)}M`;
}

/** $0.0421, $1.27: four decimals under a dollar, since single calls cost fractions of a cent. */
export function formatUsd(usd: number): string {
  return `$${usd < 1 ? usd.toFixed(4) : usd.toFixed(2)}`;
}

/** One line of the result: "PASSED reward 1 · 3 steps · 2.1 s" or "FAILED (tests_failed): …". */
export function resultLine(result: RunResult): string {
  const llm = result.llm && result.llm.requests > 0 ? ` · ${formatTokens(result.llm.input_tokens + result.llm.output_tokens)} tokens · ${formatUsd(result.llm.cost_usd)}` : '';
  const facts = `${rewardWords(result.reward, result.metrics)} · ${result.steps} step${result.steps === 1 ? '' : 's'} · ${formatDuration(result.duration_sec * 1000)}${llm}`;
  if (result.passed) return `PASSED  ${facts}`;
  return `FAILED  ${facts} · ${result.failure_cause ?? 'unknown'}: ${result.error ?? ''}`.trimEnd();
}

export function round(n: number): number {
  return Math.round(n * 100) / 100;
}

/**
 * The reward in words: "reward 0.75"; when the tests gave no single reward, their metrics one by
 * one ("correctness 0, performance 1"), or "no reward". Metric names are the tests' text: the
 * caller neutralises them where a terminal shows them.
 */
export function rewardWords(reward: number | null, metrics?: Readonly<Record<string, number>>): string {
  if (reward !== null) return `reward ${round(reward)}`;
  const named = Object.entries(metrics ?? {});
  if (named.length === 0) return 'no reward';
  const shown = named.slice(0, 6).map(([name, value]) => `${name.slice(0, 40)} ${round(value)}`);
  return `${shown.join(', ')}${named.length > 6 ? `, … (${named.length} metrics)` : ''}`;
}

/**
 * A run event as terminal text (with `\n`, not yet `\r\n`). `output` chunks arrive in pieces:
 * the caller keeps the stream; this only colours and frames them.
 */
export function formatEvent(event: RunEvent): string {
  switch (event.type) {
    case 'run-started': {
      // The backend on a line of its own: where the agent runs is the first thing to know.
      const backend = event.isolated ? ansi.dim(`backend ${event.backend}`) : ansi.yellow(`backend ${event.backend}`);
      return `${ansi.bold(`Belay: ${event.task}`)} ${ansi.dim(`(${event.protocol})`)}\n${backend}\n${ansi.dim(`run folder ${event.runDir}`)}\n`;
    }
    case 'step-started':
      return `\n${ansi.blue(ansi.bold(`── step ${event.step} ──`))}\n`;
    case 'agent-text':
      return `${ansi.magenta(indent(sanitizeTerminalText(event.text), '» '))}\n`;
    case 'command':
      return `${ansi.cyan('$')} ${ansi.bold(sanitizeTerminalText(event.command))}\n`;
    case 'output':
      return sanitizeTerminalText(event.chunk);
    case 'step-ended': {
      if (event.timedOut) return `\n${ansi.red(`timed out after ${formatDuration(event.durationMs)}`)}\n`;
      if (event.exitCode === null) return '';
      const took = event.durationMs > 0 ? ` · ${formatDuration(event.durationMs)}` : '';
      const text = `[exit ${event.exitCode}${took}]`;
      return `${event.exitCode === 0 ? ansi.dim(text) : ansi.red(text)}\n`;
    }
    case 'agent-log':
      return '';
    case 'notice':
      return `${ansi.yellow(`! ${sanitizeTerminalText(event.message)}`)}\n`;
    case 'verification-started':
      return `\n${ansi.bold('── running the tests ──')}\n`;
    case 'verification-ended': {
      const v = event.verification;
      const output = v.output.trim() === '' ? '' : `${sanitizeTerminalText(v.output.replace(/\s+$/, ''))}\n`;
      const tests = v.test_results.map((t) => `  ${t.status === 'passed' ? ansi.green('✓') : ansi.red('✗')} ${sanitizeTerminalText(t.name)}\n`).join('');
      const words = sanitizeTerminalText(rewardWords(v.reward, v.metrics));
      const verdict = v.success ? ansi.green(`tests passed (${words})`) : ansi.red(`tests failed (${words})${v.error ? `: ${sanitizeTerminalText(v.error)}` : ''}`);
      return `${output}${tests}${verdict}\n`;
    }
    case 'run-ended': {
      const line = resultLine(event.result);
      const llm = event.result.llm && event.result.llm.requests > 0 ? `${ansi.dim(`model calls: ${llmLine(event.result.llm)}`)}\n` : '';
      // Reward-hacking signals quote the agent's commands: made safe for the terminal like any agent text.
      const signals = (event.result.signals ?? []).map((line) => `${ansi.yellow(sanitizeTerminalText(`reward-hacking signal: ${SIGNAL_WORDS[line.kind]}: ${line.detail}`))}\n`).join('');
      return `\n${event.result.passed ? ansi.green(ansi.bold(line)) : ansi.red(ansi.bold(sanitizeTerminalText(line)))}\n${llm}${signals}`;
    }
  }
}

/** Characters of one step's output shown in a terminal; the rest is in the step's log. */
export const TERMINAL_OUTPUT_PER_STEP = 256 * 1024;

/**
 * Ensures the step header starts on a new line after output that did not end with one, and
 * shows at most `maxOutputPerStep` characters of a step's output (a flood stays in the log).
 */
export class EventFormatter {
  private atLineStart = true;
  private shown = 0;
  private step = 0;
  private readonly maxOutput: number;

  constructor(maxOutputPerStep = TERMINAL_OUTPUT_PER_STEP) {
    this.maxOutput = maxOutputPerStep;
  }

  format(event: RunEvent): string {
    if (event.type === 'step-started') this.shown = 0;
    if (event.type === 'step-started' || event.type === 'output') this.step = event.step;
    if (event.type === 'output') return this.output(event);
    return this.frame(event);
  }

  private output(event: RunEvent & { type: 'output' }): string {
    const room = this.maxOutput - this.shown;
    if (room < 0) return '';
    this.shown += event.chunk.length;
    if (event.chunk.length <= room) return this.frame(event);
    this.shown = this.maxOutput + 1;
    const head = this.frame({ ...event, chunk: event.chunk.slice(0, room) });
    return `${head}${this.frame({ type: 'notice', message: `more output than a terminal should hold: the rest of step ${this.step} is in its log (steps/${String(this.step).padStart(4, '0')}.log)` })}`;
  }

  private frame(event: RunEvent): string {
    let text = formatEvent(event);
    if (text === '') return '';
    if (event.type !== 'output' && !this.atLineStart && !text.startsWith('\n')) text = `\n${text}`;
    this.atLineStart = text.endsWith('\n');
    return text;
  }
}

/** The message Test Explorer shows for a failed run: the cause in words, the error, the tests' output. */
export function failureMessage(result: RunResult, maxOutputChars = 8000): string {
  const cause = result.failure_cause ?? 'unknown';
  const lines = [`${cause}: ${CAUSE_WORDS[cause] ?? cause}`];
  if (result.error) lines.push(result.error);
  const output = result.verification?.output.trim();
  if (output) {
    const cut = output.length > maxOutputChars ? `…${output.slice(-maxOutputChars)}` : output;
    lines.push('', 'Test output:', cut);
  }
  const failedTests = result.verification?.test_results.filter((t) => t.status !== 'passed') ?? [];
  if (failedTests.length > 0) lines.push('', 'Failed tests:', ...failedTests.map((t) => `- ${t.name}${t.message ? `: ${t.message}` : ''}`));
  return lines.join('\n');
}
