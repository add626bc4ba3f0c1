/** What a command-line subcommand may touch; tests hand in their own streams. */
export interface CliIO {
  stdin: NodeJS.ReadableStream;
  stdout: NodeJS.WritableStream;
  stderr: NodeJS.WritableStream;
  env: NodeJS.ProcessEnv;
  cwd: string;
}

export { UsageError } from '../shared/args.ts';

export function processIO(): CliIO {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env, cwd: process.cwd() };
}

/** Reads all of a stream as UTF-8 text. */
export async function readAll(stream: NodeJS.ReadableStream): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer));
  return Buffer.concat(chunks).toString('utf8');
}

/**
 * Resolves when the other end is gone: `stdin` ended, closed or failed, or the process was asked
 * to stop (SIGINT, SIGTERM, SIGHUP), for commands that serve until then.
 */
export function untilInputEnds(stdin: NodeJS.ReadableStream): Promise<void> {
  return new Promise((resolve) => {
    const signals = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;
    const done = () => {
      stdin.off('end', done).off('close', done).off('error', done);
      for (const signal of signals) process.off(signal, done);
      resolve();
    };
    stdin.on('end', done).on('close', done).on('error', done);
    for (const signal of signals) process.on(signal, done);
  });
}
