// `npm run test:desktop`: the same host tests in desktop VS Code through @vscode/test-electron.
// It downloads VS Code, so it needs a machine that can reach the VS Code download servers.
import { runTests } from '@vscode/test-electron';
import { execFileSync } from 'node:child_process';
import { cp, mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import * as path from 'node:path';
import { cacheDir, repoRoot, resultsDir } from './lib/paths.ts';

const { engines } = JSON.parse(await readFile(path.join(repoRoot, 'package.json'), 'utf8')) as { engines: { vscode: string } };
execFileSync(process.execPath, ['scripts/build.ts', '--tests'], { cwd: repoRoot, stdio: 'inherit' });
await mkdir(resultsDir, { recursive: true });
await mkdir(cacheDir, { recursive: true });
const workspace = await mkdtemp(path.join(cacheDir, 'desktop-ws-'));
await cp(path.join(repoRoot, 'demo'), workspace, { recursive: true });
const resultsFile = path.join(resultsDir, 'desktop.json');
try {
  await runTests({
    version: process.env.BELAY_VSCODE_VERSION ?? engines.vscode.replace(/^\^/, ''),
    extensionDevelopmentPath: repoRoot,
    extensionTestsPath: path.join(repoRoot, 'out', 'test', 'host', 'index.js'),
    launchArgs: [workspace, '--disable-extensions', '--disable-workspace-trust'],
    extensionTestsEnv: { BELAY_TEST_RESULTS: resultsFile },
    cachePath: path.join(cacheDir, 'vscode-desktop'),
  });
  const { passed, failed } = JSON.parse(await readFile(resultsFile, 'utf8')) as { passed: number; failed: number };
  console.log(`${passed} passed, ${failed} failed`);
  process.exitCode = failed > 0 ? 1 : 0;
} catch (error) {
  console.error(`desktop tests could not run: ${error instanceof Error ? error.message : String(error)}`);
  process.exitCode = 1;
} finally {
  await rm(workspace, { recursive: true, force: true });
}
