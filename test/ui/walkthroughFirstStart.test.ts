// The demo's first start, tried as a new user would after `npm start`: the Get Started walkthrough
// opens by itself, with Belay's steps (not the workbench's own first walkthrough), and nothing
// else has to be clicked to find the way in.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { openWorkbench, type Workbench } from '../support/workbench.ts';

let wb: Workbench;

before(async () => {
  // As the demo ships: the setting that opens the walkthrough on its first start is left as it is.
  wb = await openWorkbench({ settings: { 'belay.walkthrough.openInDemo': true, 'belay.cues.notifications': false } });
});
after(async () => {
  await wb?.close();
});

describe('the demo workspace on its first start', () => {
  test("opens Belay's Get Started walkthrough by itself, every step in it", async () => {
    const page = wb.page;
    const shown = page.locator('.gettingStartedContainer');
    try {
      // Belay asks for it once the workbench has registered extensions' walkthroughs (seconds after start).
      await shown.locator('.getting-started-step', { hasText: "Answer an agent's questions" }).first().waitFor({ timeout: 90_000 });
    } catch (error) {
      await wb.screenshot('walkthrough-not-opened-dark');
      // What Belay's log says it saw, for whoever reads the failure.
      const logs = execFileSync('find', [wb.host.stateDir, '-name', 'Belay.log'], { encoding: 'utf8' }).split('\n').filter(Boolean);
      for (const log of logs) console.log(readFileSync(log, 'utf8').split('\n').filter((line) => /walkthrough/i.test(line)).join('\n'));
      throw new Error('the walkthrough did not open by itself on the demo\'s first start', { cause: error });
    }
    await shown.getByText('Get Started with Belay').first().waitFor();
    for (const step of ["Apply an answer's command blocks", 'Run an agent against a task', 'Run a job and read its Results']) {
      await shown.locator('.getting-started-step', { hasText: step }).first().waitFor();
    }
    await wb.screenshot('walkthrough-opened-by-itself-dark');
  });
});
