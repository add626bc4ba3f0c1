// A scripted Term Challenge SDK 1.x agent: one JSON request per line on stdin, one JSON answer
// per line on stdout. Belay runs each command and sends its output back at the next step.
import * as readline from 'node:readline';
import { plan } from './plan.mjs';

const lines = readline.createInterface({ input: process.stdin });
let steps;
for await (const line of lines) {
  const request = JSON.parse(line);
  steps ??= plan(request.instruction);
  process.stderr.write(`[demo sdk1] step ${request.step} in ${request.cwd}\n`);
  const next = steps[request.step - 1];
  const answer = next
    ? { text: next.text, command: next.command, task_complete: false }
    : { text: `Done. The last command printed: ${(request.output ?? '').trim().split('\n')[0] || '(nothing)'}`, command: null, task_complete: true };
  process.stdout.write(JSON.stringify(answer) + '\n');
  if (answer.task_complete) break;
}
