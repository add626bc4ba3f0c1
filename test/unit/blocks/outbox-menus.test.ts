// An outbox message quotes the protocol's example blocks: the answer-wide commands (Apply All,
// Preview All, Apply Files Only, Undo Answer, Continue Session) must not be offered on it, in the
// editor's title bar, the palette or by their keys. VS Code evaluates the `when` clauses; this
// checks the clauses themselves against the names Belay gives outboxes and answers.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { test } from 'node:test';
import { repoRoot } from '../../../scripts/lib/paths.ts';
import { outboxFileName } from '../../../src/blocks/core/outbox.ts';
import { answerFileName } from '../../../src/blocks/core/session.ts';

interface Manifest {
  contributes: {
    menus: Record<string, Array<{ command: string; when?: string }>>;
    keybindings: Array<{ command: string; when?: string }>;
  };
}
const manifest = JSON.parse(readFileSync(path.join(repoRoot, 'package.json'), 'utf8')) as Manifest;
const ANSWER_WIDE = ['belay.blocks.applyAll', 'belay.blocks.previewAll', 'belay.blocks.applyFilesOnly', 'belay.blocks.undoAnswer', 'belay.blocks.continueSession'];

/** Whether a `when` clause's `resourceFilename =~ /…/` tests let this file name through (true when it has none). */
function fileNameAllowed(when: string, fileName: string): boolean {
  return [...when.matchAll(/resourceFilename =~ \/(.+?)\/(?=\s|$)/g)].every((m) => new RegExp(m[1]!).test(fileName));
}

test('the answer-wide commands are offered on answers and never on an outbox message', () => {
  const entries = [...Object.values(manifest.contributes.menus).flat(), ...manifest.contributes.keybindings].filter((e) => ANSWER_WIDE.includes(e.command) && e.when?.includes('editorLangId == codingagent'));
  assert.ok(entries.length >= ANSWER_WIDE.length, `found ${entries.length} places offering them`);
  const outboxes = [outboxFileName('151aacee', 1), outboxFileName('0123abcd', 42)];
  const answers = [answerFileName('151aacee', 1, 1_700_000_000_000), answerFileName('151aacee', 2, 1_700_000_000_000, 'agent'), 'example.agent', 'Untitled-1', 'notes_seq0001.txt.bak'];
  for (const entry of entries) {
    for (const name of outboxes) assert.equal(fileNameAllowed(entry.when!, name), false, `${entry.command} (${entry.when}) is offered on the outbox ${name}`);
    for (const name of answers) assert.equal(fileNameAllowed(entry.when!, name), true, `${entry.command} is not offered on ${name}`);
  }
});

test("Send to Model is offered on exactly the outbox names the answer-wide commands leave out", () => {
  const send = manifest.contributes.menus['editor/title']!.find((e) => e.command === 'belay.blocks.sendToModel')!;
  assert.equal(fileNameAllowed(send.when!, outboxFileName('151aacee', 1)), true);
  assert.equal(fileNameAllowed(send.when!, 'example.agent'), false);
});
