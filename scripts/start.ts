// `npm start`: packages Belay, installs the .vsix into a real VS Code and opens the demo workspace.
//   npm start                         code-server on http://127.0.0.1:8080 (prints the URL)
//   npm start -- --port 9000          another port
//   npm start -- --folder ~/project   another workspace
//   npm start -- --workspace-trust    keep VS Code's trust prompt (to see the restricted mode)
//   npm start -- --isolated-home      a mailbox of its own (.cache/start/home/.cue), not ~/.cue
//   npm start -- --desktop            install into the desktop `code` command and open there
// It also builds dist/ (as `npm run build`), so `npx belay` and `npx cueme` run in this folder.
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import { createServer } from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { parseCommandLine, UsageError, wantsHelp } from '../src/shared/args.ts';
import { errorMessage } from '../src/shared/errors.ts';
import { installVsix, startHost } from './lib/host.ts';
import { packageVsix } from './lib/package.ts';
import { cacheDir, repoRoot } from './lib/paths.ts';

const USAGE = 'Usage: npm start -- [--port N] [--folder DIR] [--workspace-trust] [--isolated-home] [--desktop]\n';

/** Ends `npm start` with one line on stderr: what went wrong, never a stack. */
function fail(message: string, code: number): never {
  console.error(`npm start: ${message}`);
  process.exit(code);
}

/** The mailbox `cueme` uses in the person's own shells: CUE_HOME, else ~/.cue. */
function personalMailbox(env: NodeJS.ProcessEnv): string {
  const chosen = env.CUE_HOME?.trim();
  return path.resolve(chosen ? chosen.replace(/^~(?=$|\/)/, os.homedir()) : path.join(os.homedir(), '.cue'));
}

/** Whether something already listens on 127.0.0.1:`port` (code-server would fail, or a stranger would answer). */
function portInUse(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const probe = createServer();
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'EADDRINUSE'));
    probe.listen(port, '127.0.0.1', () => probe.close(() => resolve(false)));
  });
}

const args = process.argv.slice(2);
if (wantsHelp(args)) {
  process.stdout.write(USAGE);
  process.exit(0);
}
let options;
try {
  options = parseCommandLine(args, { port: { type: 'string' }, folder: { type: 'string' }, desktop: { type: 'boolean' }, 'workspace-trust': { type: 'boolean' }, 'isolated-home': { type: 'boolean' } }, { positionals: false });
} catch (error) {
  fail(`${errorMessage(error)} (npm start -- --help lists the options)`, error instanceof UsageError ? 2 : 1);
}
const values = options.values;
const portText = values.port ?? process.env.BELAY_PORT ?? '8080';
const port = Number(portText);
if (!/^\d+$/.test(portText) || port < 1 || port > 65535) fail(`--port must be a number from 1 to 65535, not '${portText}'`, 2);
const folder = path.resolve((values.folder ?? path.join(repoRoot, 'demo')).replace(/^~(?=$|\/)/, process.env.HOME ?? '~'));
if (!existsSync(folder)) fail(`--folder ${folder} does not exist`, 2);
if (!values.desktop && (await portInUse(port))) {
  fail(`port ${port} is already in use on 127.0.0.1; choose another with --port N (or BELAY_PORT=N)`, 1);
}
process.on('uncaughtException', (error) => fail(errorMessage(error), 1));
process.on('unhandledRejection', (error) => fail(errorMessage(error), 1));

// dist/ holds the command lines people run from this folder (`npx belay`, `npx cueme`); the .vsix
// is built apart, from production bundles.
execFileSync(process.execPath, [path.join(repoRoot, 'scripts', 'build.ts')], { cwd: repoRoot, stdio: 'inherit' });
const vsix = await packageVsix();
console.log(`Packaged ${path.relative(repoRoot, vsix)}`);

if (values.desktop) {
  if (spawnSync('sh', ['-c', 'command -v code'], { stdio: 'ignore' }).status !== 0) {
    fail("--desktop needs VS Code's `code` command on the PATH; without it, run `npm start` for the browser workbench.", 1);
  }
  execFileSync('code', ['--install-extension', vsix, '--force'], { stdio: 'inherit' });
  execFileSync('code', [folder], { stdio: 'inherit' });
  console.log(`Opened ${folder} in VS Code with Belay installed.`);
  process.exit(0);
}

// One state folder kept between starts, so layout and settings persist like a real installation
// (BELAY_START_STATE moves it: a test of `npm start` must not take over a person's).
const stateDir = path.resolve(process.env.BELAY_START_STATE || path.join(cacheDir, 'start'));
await mkdir(stateDir, { recursive: true });
await installVsix(vsix, stateDir);
// The server gets a HOME of its own (settings, extensions, sockets), but the person's own mailbox,
// so a `cueme` run in any shell of theirs reaches the panel. --isolated-home keeps one apart.
const mailbox = values['isolated-home'] ? undefined : personalMailbox(process.env);
const host = await startHost({ port, folder, stateDir, workspaceTrust: values['workspace-trust'], env: { CUE_HOME: mailbox } });
const url = host.url(folder);
console.log(`\nBelay is running in VS Code at:\n\n  ${url}\n\nOpen it in a browser; the Belay view is in the activity bar. Ctrl-C stops it.`);
console.log(`(server log: ${path.relative(repoRoot, path.join(stateDir, 'code-server.log'))})`);
console.log(mailbox === undefined
  ? `Cues: a mailbox of its own, ${path.join(stateDir, 'home', '.cue')} (--isolated-home); a cueme reaches it with CUE_HOME set to that folder.`
  : `Cues: your mailbox, ${mailbox}; cueme in any of your shells reaches the panel.`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  await host.stop();
  process.exit(0);
};
process.on('SIGINT', () => void stop());
process.on('SIGTERM', () => void stop());
host.process.on('exit', (code) => {
  if (!stopping) {
    console.error(`code-server exited (${code}); see ${path.join(stateDir, 'code-server.log')}`);
    process.exit(1);
  }
});
