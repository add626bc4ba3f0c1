// The walkthrough's table of demo examples against the real demo folder and the manifest: every
// step names a file the demo has, every walkthrough step in package.json has a row here (and its
// button names it), and a folder missing any example is not taken for the demo.
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { describe, test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { DEMO_STEPS, demoStep, isDemoFolder, WALKTHROUGH_ID, WALKTHROUGH_TITLE } from '../../../src/walkthrough/core/demo.ts';

const demo = path.join(repoRoot, 'demo');

interface Walkthrough {
  id: string;
  steps: Array<{ id: string; description: string; media: { markdown?: string } }>;
}
const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as { contributes: { walkthroughs: Walkthrough[]; commands: Array<{ command: string }> } };

describe('the Get Started walkthrough', () => {
  test('the demo folder is the demo; a copy missing any one example is not', () => {
    assert.equal(isDemoFolder(demo), true);
    const dir = mkdtempSync(path.join(tmpdir(), 'belay-walkthrough-'));
    try {
      for (const step of Object.values(DEMO_STEPS)) {
        const copy = path.join(dir, step.file.replace(/\W/g, '_'));
        cpSync(demo, copy, { recursive: true });
        rmSync(path.join(copy, step.file));
        assert.equal(isDemoFolder(copy), false, `without ${step.file}`);
      }
      assert.equal(isDemoFolder(path.join(dir, 'nowhere')), false);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('step names from a command link are checked: only the table rows pass', () => {
    assert.equal(demoStep('cues'), 'cues');
    for (const bad of ['toString', '__proto__', 'constructor', '', 'CUES', 1, null, undefined, ['cues'], { step: 'cues' }]) {
      assert.equal(demoStep(bad), undefined, JSON.stringify(bad));
    }
  });

  test('each walkthrough step in package.json has a row here, a button for it and its markdown in media/', () => {
    const walkthrough = manifest.contributes.walkthroughs.find((w) => w.id === WALKTHROUGH_ID);
    assert.ok(walkthrough, `package.json has the walkthrough ${WALKTHROUGH_ID}`);
    assert.equal((walkthrough as Walkthrough & { title: string }).title, WALKTHROUGH_TITLE, 'the title the walkthrough is shown with');
    assert.deepEqual(walkthrough.steps.map((s) => s.id).sort(), Object.keys(DEMO_STEPS).sort());
    for (const step of walkthrough.steps) {
      assert.ok(step.description.includes(`command:belay.walkthrough.try?${encodeURIComponent(JSON.stringify([step.id]))}`), `${step.id} has a button that opens its example`);
      const media = step.media.markdown ?? '';
      assert.ok(media.startsWith('media/'), `${step.id} has markdown media in media/`);
      const text = readFileSync(path.join(repoRoot, media), 'utf8');
      assert.doesNotMatch(text, /https?:\/\//, `${media} loads nothing from outside`);
    }
    const commands = new Set(manifest.contributes.commands.map((c) => c.command));
    assert.ok(commands.has('belay.walkthrough.try') && commands.has('belay.walkthrough.open'));
  });
});
