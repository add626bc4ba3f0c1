// `npm start`: packages Belay, installs the .vsix into a real VS Code and opens the demo workspace.
//   npm start                         code-server on http://127.0.0.1:8080 (prints the URL)
//   npm start -- --port 9000          another port
//   npm start -- --folder ~/project   another workspace
//   npm start -- --workspace-trust    keep VS Code's trust prompt (to see the restricted mode)
//   npm start -- --desktop            install into the desktop `code` command and open there
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { installVsix, startHost } from './lib/host.ts';
import { packageVsix } from './lib/package.ts';
import { cacheDir, repoRoot } from './lib/paths.ts';

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: process.env.BELAY_PORT ?? '8080' },
    folder: { type: 'string', default: path.join(repoRoot, 'demo') },
    desktop: { type: 'boolean', default: false },
    'workspace-trust': { type: 'boolean', default: false },
    help: { type: 'boolean', short: 'h', default: false },
  },
});
if (values.help) {
  console.log('Usage: npm start -- [--port N] [--folder DIR] [--workspace-trust] [--desktop]');
  process.exit(0);
}
const port = Number(values.port);
if (!Number.isInteger(port) || port < 1 || port > 65535) {
  console.error(`--port must be a number from 1 to 65535, not '${values.port}'`);
  process.exit(2);
}
const folder = path.resolve(values.folder.replace(/^~(?=$|\/)/, process.env.HOME ?? '~'));
if (!existsSync(folder)) {
  console.error(`--folder ${folder} does not exist`);
  process.exit(2);
}

const vsix = await packageVsix();
console.log(`Packaged ${path.relative(repoRoot, vsix)}`);

if (values.desktop) {
  if (spawnSync('sh', ['-c', 'command -v code'], { stdio: 'ignore' }).status !== 0) {
    console.error("--desktop needs VS Code's `code` command on the PATH; without it, run `npm start` for the browser workbench.");
    process.exit(1);
  }
  execFileSync('code', ['--install-extension', vsix, '--force'], { stdio: 'inherit' });
  execFileSync('code', [folder], { stdio: 'inherit' });
  console.log(`Opened ${folder} in VS Code with Belay installed.`);
  process.exit(0);
}

// One state folder kept between starts, so layout and settings persist like a real installation.
const stateDir = path.join(cacheDir, 'start');
await mkdir(stateDir, { recursive: true });
await installVsix(vsix, stateDir);
const host = await startHost({ port, folder, stateDir, workspaceTrust: values['workspace-trust'] });
const url = host.url(folder);
console.log(`\nBelay is running in VS Code at:\n\n  ${url}\n\nOpen it in a browser; the Belay view is in the activity bar. Ctrl-C stops it.`);
console.log(`(server log: ${path.relative(repoRoot, path.join(stateDir, 'code-server.log'))})`);

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
