import type { AttachedFile } from './store.ts';

// What `cueme` prints. The structure is the public cueme's (the `key=value` lines, the lead-in,
// the text, the attachment paths, the reminder to cue again; the cancelled, empty and timeout
// messages that send the agent to pause), in English, so agents behave the same with either tool.

export type CueMode = 'cue' | 'pause';

/** The two paragraphs that keep an agent in the loop: it must cue again before it ends its reply. */
export const CUE_AGAIN_REMINDER =
  'IMPORTANT (Human Agent Protocol): you must follow the Human Agent Protocol. Before you finish my instruction or when you answer a question, you MUST cue me (call cue(prompt, agent_id, payload?) so I can continue). Do not end your reply before you have actually called cue.\n\n' +
  'IMPORTANT (todo list): before you start on this instruction, check your todo list and make sure its last item is "send {{the response this instruction calls for}} with cue". If it is missing, add it now.';

export function joinText(info: { agentId: string; projectDir: string; terminal: string; runtime: string }): string {
  return (
    `agent_id=${info.agentId}\n` +
    `project_dir=${info.projectDir}\n` +
    `agent_terminal=${info.terminal}\n` +
    `agent_runtime=${info.runtime}\n\n` +
    'Use this agent_id when calling cue(prompt, agent_id). You must remember this agent_id: when calling cue(), pass it as agent_id so the system knows who you are. ' +
    'Before ending this session, call cue. Please use cue to provide a final summary, ask a question, or make a request.\n'
  );
}

export function recallText(agentId: string, found: boolean): string {
  const head = found ? '' : 'No matching record found; generated a new agent_id.\n\n';
  return `${head}agent_id=${agentId}\n\nUse this agent_id when calling cue(prompt, agent_id).\n`;
}

export function answerText(text: string, files: readonly AttachedFile[]): string {
  const body = text.trim();
  const parts: string[] = [];
  if (body) parts.push(`The user wants to continue and gave these instructions:\n\n${body}`);
  else parts.push('The user wants to continue and attached files:');
  if (files.length > 0) {
    const lines = files.map((f) => `- ${f.absolutePath}${f.mimeType ? ` (${f.mimeType})` : ''}`);
    parts.push(`Attached file paths (images and other files alike). Read these files yourself before you continue:\n${lines.join('\n')}`);
  }
  parts.push(CUE_AGAIN_REMINDER);
  return parts.join('\n\n') + '\n';
}

export function cancelledText(mode: CueMode): string {
  const head = 'The user did not continue. Call pause(agent_id) to suspend and wait for resume.';
  return mode === 'pause' ? `${head}\n\n${CUE_AGAIN_REMINDER}\n` : `${head}\n`;
}

/** A response with blank text and no files: for a pause this is the "Continue" click. */
export function emptyAnswerText(mode: CueMode): string {
  return mode === 'pause'
    ? `The user resumed the conversation.\n\n${CUE_AGAIN_REMINDER}\n`
    : `No user input received. Call pause(agent_id) to suspend and wait for resume.\n\n${CUE_AGAIN_REMINDER}\n`;
}

export function timeoutText(mode: CueMode): string {
  return mode === 'pause'
    ? 'Tool call was cancelled. Call pause(agent_id) to suspend and wait for resume.\n'
    : 'Timed out waiting for user response. You MUST NOT continue or add any extra output. Immediately call pause(agent_id) and stop output until resumed.\n';
}
