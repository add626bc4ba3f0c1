// A scripted nanobot micro-agent (terminal protocol v1, rich mode): reads the envelope on stdin,
// answers with JSON-lines frames. It remembers how many messages each user sent (in the user's
// data folder) and draws a tiny picture when asked to "draw".
import * as fs from 'node:fs';
import * as path from 'node:path';

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const envelope = JSON.parse(Buffer.concat(chunks).toString('utf8'));
const frame = (f) => process.stdout.write(JSON.stringify(f) + '\n');

const memoryFile = path.join(envelope.user_data_dir, 'memory.json');
const memory = fs.existsSync(memoryFile) ? JSON.parse(fs.readFileSync(memoryFile, 'utf8')) : { messages: 0 };
memory.messages++;
fs.writeFileSync(memoryFile, JSON.stringify(memory));

frame({ type: 'progress', text: 'Thinking…' });
frame({ type: 'log', level: 'info', text: `message ${memory.messages} from ${envelope.chat_id}` });
const text = envelope.text.trim();
frame({ type: 'message', text: `You said "${text}". That is message #${memory.messages} from you.` });
if (/draw/i.test(text)) {
  frame({ type: 'progress', text: 'Drawing…' });
  // A 1×1 PNG: enough to show that media arrive as files.
  const png = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==', 'base64');
  const file = path.join(envelope.user_data_dir, `drawing-${memory.messages}.png`);
  fs.writeFileSync(file, png);
  frame({ type: 'message', text: 'Here is your drawing:', media: [file] });
}
