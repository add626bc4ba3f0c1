// Runs inside the VS Code extension host (code-server or desktop): loads every *.test.js beside
// this file into mocha and reports the counts to the file named by BELAY_TEST_RESULTS.
import Mocha from 'mocha';
import { readdirSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';

interface Outcome {
  title: string;
  state: 'passed' | 'failed';
  error?: string;
}

export function run(): Promise<void> {
  const mocha = new Mocha({ ui: 'tdd', timeout: 60_000, color: false });
  const grep = process.env.BELAY_TEST_GREP;
  if (grep) mocha.grep(grep);
  for (const file of readdirSync(__dirname).sort()) {
    if (file.endsWith('.test.js')) mocha.addFile(path.join(__dirname, file));
  }
  const outcomes: Outcome[] = [];
  return new Promise((resolve, reject) => {
    const runner = mocha.run((failures) => {
      const passed = outcomes.filter((o) => o.state === 'passed').length;
      const failed = outcomes.filter((o) => o.state === 'failed').length;
      const file = process.env.BELAY_TEST_RESULTS;
      if (file) writeFileSync(file, JSON.stringify({ passed, failed, outcomes }, null, 2));
      console.log(`${passed} passed, ${failed} failed`);
      if (failures > 0) reject(new Error(`${failures} host tests failed`));
      else resolve();
    });
    runner.on('pass', (t) => outcomes.push({ title: t.fullTitle(), state: 'passed' }));
    runner.on('fail', (t, err: Error) => {
      outcomes.push({ title: t.fullTitle(), state: 'failed', error: err.stack ?? err.message });
      console.error(`FAILED ${t.fullTitle()}: ${err.stack ?? err.message}`);
    });
  });
}
