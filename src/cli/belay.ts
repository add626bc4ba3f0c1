// Must stay the first import: on an old Node it hands the command to the project's Node 22 first.
import { runsHere } from './node-check.ts';
import { wantsHelp } from '../shared/args.ts';
import { errorMessage } from '../shared/errors.ts';
import { processIO, UsageError, type CliIO } from './io.ts';
import { subcommands } from './registry.ts';

declare const BELAY_VERSION: string;

function usage(): string {
  const width = Math.max('--version'.length, ...subcommands.map((s) => s.name.length));
  const lines = [
    'Usage: belay <command> [options]',
    '',
    'Belay: work with AI agents from the command line and the editor.',
    '',
    'Commands:',
    ...subcommands.map((s) => `  ${s.name.padEnd(width)}  ${s.summary}`),
    '',
    'Options:',
    `  ${'--help'.padEnd(width)}  show this help (or "belay <command> --help")`,
    `  ${'--version'.padEnd(width)}  print the version`,
  ];
  return lines.join('\n') + '\n';
}

export async function main(argv: string[], io: CliIO): Promise<number> {
  const [first, ...rest] = argv;
  if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
    if (first === 'help' && rest[0] !== undefined) return main([rest[0], '--help'], io);
    io.stdout.write(usage());
    return first === undefined ? 2 : 0;
  }
  if (first === '--version' || first === '-v') {
    io.stdout.write(`${BELAY_VERSION}\n`);
    return 0;
  }
  if (first.startsWith('-')) {
    io.stderr.write(`belay: Unknown option '${first}'. Run 'belay --help' for the list of commands.\n`);
    return 2;
  }
  const command = subcommands.find((s) => s.name === first);
  if (!command) {
    io.stderr.write(`belay: unknown command '${first}'. Run 'belay --help' for the list of commands.\n`);
    return 2;
  }
  try {
    const module = await command.load();
    if (wantsHelp(rest)) {
      io.stdout.write(module.usage);
      return 0;
    }
    return await module.run(rest, io);
  } catch (error) {
    if (error instanceof UsageError) {
      io.stderr.write(`belay ${command.name}: ${error.message}\n`);
      return 2;
    }
    io.stderr.write(`belay ${command.name}: ${errorMessage(error)}\n`);
    return 1;
  }
}

if (runsHere) {
  main(process.argv.slice(2), processIO()).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      process.stderr.write(`belay: ${errorMessage(error)}\n`);
      process.exitCode = 1;
    },
  );
}
