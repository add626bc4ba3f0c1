// The outbox file: everything the LLM needs in one message (HEADER, PROTOCOL, CONTEXT, PROMPT).
import { readFileHead } from './files.ts';
import { CONTINUATION_PROMPT, protocolText, SECTION, type ProtocolOptions } from './protocol.ts';
import { formatResults, type CommandResult } from './results.ts';
import { resolveInWorkspace, type Workspace } from './sandbox.ts';
import { listWorkspace, type WorkspaceFile } from './workspace.ts';

/** Files listed at most; a larger workspace is summarised after them. */
const MAX_LISTED_FILES = 2000;
/** Characters of one requested file included at most. */
const MAX_REQUESTED_CHARS = 200_000;

export interface RequestedFile {
  path: string;
  /** The text (`complete` unless cut), or why there is none ("file not found", "binary file, 12 bytes", …). */
  content: { text: string; complete: boolean } | { note: string };
}

export interface OutboxContent {
  sessionId: string;
  sequence: number;
  task: string;
  files: readonly WorkspaceFile[];
  /** Results of the previous answer; absent in the first outbox. */
  previousResults?: readonly CommandResult[];
  /** Said in place of the results when the previous answer's processing was interrupted. */
  notice?: string;
  requested: readonly RequestedFile[];
  protocol?: ProtocolOptions;
}

export function outboxFileName(sessionId: string, sequence: number): string {
  return `${sessionId}_seq${String(sequence).padStart(4, '0')}.txt`;
}

/** The outbox text. Pure: the same content always gives the same text. */
export function renderOutbox(content: OutboxContent): string {
  const out: string[] = [];
  out.push(SECTION.header);
  out.push(`Session: ${content.sessionId}`);
  out.push(`Sequence: ${content.sequence}`);
  out.push(`Task: ${content.task.trim().replace(/\r?\n/g, '\n  ')}`);
  out.push('');
  out.push(SECTION.protocol);
  out.push(protocolText(content.protocol));
  out.push('');
  out.push(SECTION.context);
  out.push('## Workspace Files');
  if (content.files.length === 0) out.push('(empty workspace)');
  for (const file of content.files.slice(0, MAX_LISTED_FILES)) out.push(`  ${file.path} (${file.size} bytes)`);
  if (content.files.length > MAX_LISTED_FILES) out.push(`  ... and ${content.files.length - MAX_LISTED_FILES} more files`);
  if (content.previousResults !== undefined || content.notice !== undefined) {
    out.push('');
    out.push('## Previous Command Results');
    if (content.notice !== undefined) out.push(content.notice);
    else if (content.previousResults!.length === 0) out.push('(your last answer contained no command blocks)');
    else out.push(formatResults(content.previousResults!));
  }
  if (content.requested.length > 0) {
    out.push('');
    out.push('## Requested File Contents');
    for (const file of content.requested) {
      out.push(`--- ${file.path} ---`);
      if ('text' in file.content) {
        if (file.content.text !== '') out.push(file.content.text.replace(/\r?\n$/, ''));
      } else {
        out.push(`(${file.content.note})`);
      }
      out.push(`--- end ${file.path} ---`);
    }
  }
  out.push('');
  out.push(SECTION.prompt);
  out.push(content.sequence === 1 ? content.task.trim() : CONTINUATION_PROMPT);
  return `${out.join('\n')}\n`;
}

/** Reads the files an answer asked for, through the sandbox again (they may have changed since). */
async function readRequestedFiles(workspace: Workspace, paths: readonly string[]): Promise<RequestedFile[]> {
  const requested: RequestedFile[] = [];
  for (const path of paths) {
    const resolution = await resolveInWorkspace(workspace, path);
    if (!resolution.ok) {
      requested.push({ path, content: { note: resolution.summary } });
      continue;
    }
    // Only the head of a large file is read (a character is at most 4 bytes); a FIFO, socket or
    // device is named, never opened.
    const head = await readFileHead(workspace, resolution.path.real, MAX_REQUESTED_CHARS * 4);
    if (!head.ok) {
      requested.push({ path, content: { note: head.note } });
      continue;
    }
    const { data, size } = head;
    if (data.includes(0)) {
      requested.push({ path, content: { note: `binary file, ${size} bytes, not shown` } });
      continue;
    }
    const text = data.toString('utf8');
    const whole = data.length === size;
    const complete = whole && text.length <= MAX_REQUESTED_CHARS;
    requested.push({
      path,
      content: {
        text: !whole
          ? `${text.slice(0, MAX_REQUESTED_CHARS)}\n... (file truncated: ${size} bytes, only the first ${MAX_REQUESTED_CHARS} characters shown)`
          : text.length > MAX_REQUESTED_CHARS
            ? `${text.slice(0, MAX_REQUESTED_CHARS)}\n... (file truncated: ${text.length - MAX_REQUESTED_CHARS} more characters not shown)`
            : text,
        complete,
      },
    });
  }
  return requested;
}

/** The files an outbox lists (the first MAX_LISTED_FILES), and the texts it sends whole: what the LLM sees. */
export function seenByLlm(content: OutboxContent): { listed: string[]; sent: Map<string, string> } {
  const sent = new Map<string, string>();
  for (const file of content.requested) if ('text' in file.content && file.content.complete) sent.set(file.path, file.content.text);
  return { listed: content.files.slice(0, MAX_LISTED_FILES).map((f) => f.path), sent };
}

/** Gathers what an outbox shows from the workspace: its files, and the requested contents. */
export async function collectOutbox(
  workspace: Workspace,
  base: Omit<OutboxContent, 'files' | 'requested'>,
  readFileRequests: readonly string[],
): Promise<OutboxContent> {
  const [files, requested] = await Promise.all([listWorkspace(workspace.realRoot), readRequestedFiles(workspace, readFileRequests)]);
  return { ...base, files, requested };
}
