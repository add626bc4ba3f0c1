import type { CliIO } from './io.ts';

export interface SubcommandModule {
  /** Runs the subcommand with the arguments after its name; resolves to the exit code. */
  run(args: string[], io: CliIO): Promise<number>;
}

export interface Subcommand {
  name: string;
  summary: string;
  /** Loaded only when the subcommand is used, so `belay --help` stays fast. */
  load(): Promise<SubcommandModule>;
}

/** Every `belay` subcommand: one line each, the module holds its own usage text. */
export const subcommands: readonly Subcommand[] = [
];
