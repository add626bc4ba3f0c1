// The scripted "thinking" of the demo agents (no LLM): which commands solve which demo task.
// DEMO_MODE=wrong solves hello-world wrongly (the tests fail); DEMO_MODE=stuck runs a command
// that never ends (to try Stop).
export function plan(instruction, mode = process.env.DEMO_MODE ?? 'right') {
  if (mode === 'stuck') {
    return [
      { text: 'Looking around first.', command: 'ls -la' },
      { text: 'Waiting for something that never comes (press Stop).', command: 'sleep 600' },
    ];
  }
  if (/count\.txt/.test(instruction)) {
    return [
      { text: 'Counting the words of words.txt with wc -w.', command: 'wc -w < words.txt | tr -d " " > count.txt' },
      { text: 'Checking what I wrote.', command: 'cat count.txt' },
    ];
  }
  if (/lines\.txt/.test(instruction)) {
    return [
      { text: 'Counting the lines of poem.txt with wc -l.', command: 'wc -l < poem.txt | tr -d " " > lines.txt' },
      { text: 'Writing the report where the task collects it.', command: 'mkdir -p /tmp/report && printf "%s\\n\\nCounted the lines of poem.txt with wc -l into lines.txt.\\n" "$REPORT_TITLE" > /tmp/report/summary.txt && cat /tmp/report/summary.txt' },
    ];
  }
  if (/hello\.txt/.test(instruction)) {
    const greeting = mode === 'wrong' ? 'Hello, moon!' : 'Hello, world!';
    return [
      { text: 'I will write the greeting into hello.txt.', command: `printf '%s\\n' '${greeting}' > hello.txt` },
      { text: 'Reading it back to be sure.', command: 'cat hello.txt && ls -l hello.txt' },
    ];
  }
  return [{ text: 'I do not know this task; listing the folder and giving up.', command: 'ls -la' }];
}
