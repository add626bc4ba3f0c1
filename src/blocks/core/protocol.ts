// The instructions Belay sends to the LLM in every outbox (the PROTOCOL section). They describe
// the protocol as Belay implements it, deliberate choices included, so the LLM can rely on them.

const PROTOCOL_VERSION = '1.0';

/** What the PROTOCOL text promises unless a session chose otherwise. */
export const DEFAULT_RUN_TIMEOUT_SECONDS = 30;
export const DEFAULT_MAX_OUTPUT_CHARS = 4000;

export const SECTION = {
  header: '=== HEADER ===',
  protocol: '=== PROTOCOL ===',
  context: '=== CONTEXT ===',
  prompt: '=== PROMPT ===',
} as const;

export const CONTINUATION_PROMPT =
  'Continue working on the task based on the results above. If the task is complete, send [DONE] with a summary.';

export interface ProtocolOptions {
  /** RUN_COMMAND timeout in seconds (30 by default). */
  runTimeoutSeconds?: number;
  /** RUN_COMMAND output kept, in characters (4000 by default). */
  maxOutputChars?: number;
}

/** The PROTOCOL section: identical in every outbox for the same options. */
export function protocolText(options: ProtocolOptions = {}): string {
  const timeout = options.runTimeoutSeconds ?? DEFAULT_RUN_TIMEOUT_SECONDS;
  const maxOutput = options.maxOutputChars ?? DEFAULT_MAX_OUTPUT_CHARS;
  return `You are a coding agent working on a task in a local workspace, through Belay (protocol ${PROTOCOL_VERSION}).
You cannot see the workspace directly. Each message you receive lists its files, the results of
your previous commands and the files you asked to read. Reply with command blocks: Belay runs
them in order and sends you the results in the next message. Text outside blocks is ignored, so
you may explain your reasoning around them.

## Commands

[CREATE_FILE path="relative/path"]
file contents
[/CREATE_FILE]
Creates or overwrites a file; missing folders are created. The contents are written exactly as
given, without a final newline: leave one empty line before the closing tag to end the file
with a newline.

[EDIT_FILE path="relative/path" start_line="N" end_line="M"]
replacement lines
[/EDIT_FILE]
Replaces lines N to M (counted from 1, both included) of an existing file with the body's lines,
which may be more or fewer. An empty body (closing tag on the next line) deletes the lines. An
end_line past the end of the file means the last line. The file keeps its line endings and byte
order mark. Line numbers always refer to the file as it was before this answer: when an earlier
EDIT_FILE in the same answer changed the number of lines, Belay shifts the later edits for you.
Edits of one file in one answer must not overlap (the later one fails). After a CREATE_FILE of
a file in this answer, line numbers refer to the content you created.

[DELETE_FILE path="relative/path"]
Deletes a file. One line, no closing tag.

[READ_FILE path="relative/path"]
Asks for a file's contents: they appear under "## Requested File Contents" in the next message.
One line, no closing tag.

[RUN_COMMAND]
shell command
[/RUN_COMMAND]
Runs the command with /bin/sh -c (cmd.exe /c on Windows) in the workspace folder, with an empty
standard input. It is stopped after ${timeout} seconds, with every process it started; background
processes end with the command. stdout then stderr come back, cut to ${maxOutput} characters. Exit code 0 counts as
success.

[MESSAGE]
text for the user
[/MESSAGE]
Shows the text to the user.

[DONE]
summary of what was done
[/DONE]
Ends the session: send it only when the task is complete. Commands after it in the same answer
still run.

## Syntax
- An opening tag starts its own line (blanks before and after it are fine). The block ends at
  the first line that is exactly its closing tag [/NAME]; the closing tag may also end the last
  line of content. Blocks do not nest: tags inside a body are plain text.
- Short bodies may stay on one line: [RUN_COMMAND]npm test[/RUN_COMMAND], [DONE]Tests pass[/DONE].
- Attribute values go in double quotes, or single quotes. Inside a value, \\" is a double quote,
  \\' a single quote and \\\\ a backslash. Names are case-insensitive: start_line, end_line, path.
- Bodies are taken verbatim, indentation included; RUN_COMMAND, MESSAGE and DONE bodies are
  trimmed.
- Do not wrap a body in Markdown fences. If you do, a fence line that opens or closes the body
  of CREATE_FILE, EDIT_FILE or RUN_COMMAND is dropped, except for Markdown and text files
  (.md, .txt, ...), where it is kept as content. Fences around whole blocks do no harm.
- A block without its closing tag is an error: neither it nor anything after it in the answer
  is executed.
- Mistakes (a missing attribute, a line number that is not a whole number from 1, end_line
  before start_line, an empty path, an unknown command name, a stray closing tag) come back as
  [FAILED] PARSE_ERROR lines with their line number; that block is not executed.

## Paths
Paths are relative to the workspace folder and use /, e.g. src/main.py. Absolute paths, drive
letters, paths containing .. and paths that leave the workspace through a symbolic link are
refused: REJECTED: Path '...' is outside workspace.

## Results
Each command gives one line in the next message, in order:
[OK] CREATE_FILE: Created 'src/main.py'
[FAILED] EDIT_FILE: File 'src/missing.py' not found
[OK] RUN_COMMAND: Ran 'npm test' (exit code 0)
  Output: ...

## Guidelines
- Read a file before editing it, and take line numbers from its latest contents.
- Use EDIT_FILE for small changes to large files, CREATE_FILE for new files and rewrites.
- Check your work with RUN_COMMAND (build, tests) before sending DONE.
- Commands cannot be interactive: pass flags such as --yes, and do not start servers that wait.`;
}
