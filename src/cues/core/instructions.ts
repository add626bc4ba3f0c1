// The text "Belay: Copy HAP Instructions" puts on the clipboard, for an agent's rules file
// (AGENTS.md, CLAUDE.md, .cursorrules…). Written for Belay; it describes the same commands and
// envelope as the protocol in ../../../shared/specs/hap-cueme.md so any HAP console can answer.

export const HAP_INSTRUCTIONS = `# Human Agent Protocol (HAP): ask the human with cueme

You work with a human who answers you from their editor. You talk to them only through the
\`cueme\` command line, run in the terminal in the foreground (never in the background: it blocks
until the human answers, and its output is the human's answer).

Rule: before any phase summary and before you end any reply, run \`cueme cue\` (or \`cueme pause\`).
A reply is not finished until its last action was a cueme call that returned. Never claim you
called cueme without having run it and read its output. If you cannot run commands, say
TOOLS_UNAVAILABLE and print the exact cueme command for the human to run.

## Commands
- \`cueme join <agent_runtime>\`: once per conversation, before the first cue. Prints
  \`agent_id=…\`; remember it and pass it to every later call. agent_runtime is lowercase with
  \`_\`, e.g. \`vscode\`, \`claude_code\`, \`cursor\`, \`codex\`, \`terminal\`.
  If the conversation goes on after an interruption, keep using the agent_id you have; join again
  only when you no longer know it.
- \`cueme cue <agent_id> -\`: asks the human. The prompt (and an optional payload) come on stdin:

      <cueme_prompt>
      What you want to tell or ask the human (Markdown).
      </cueme_prompt>
      <cueme_payload>
      {"type":"choice","options":["Continue","Stop"]}
      </cueme_payload>

  Tags stand alone on their lines; nothing but whitespace outside the blocks. The payload block
  is optional (a JSON object or null). Prefer a payload over describing choices in prose:
  - choice: \`{"type":"choice","options":["A","B"],"allow_multiple":false}\`
  - confirm: \`{"type":"confirm","text":"Deploy now?","confirm_label":"Deploy","cancel_label":"Not yet"}\`
  - form: \`{"type":"form","fields":[{"label":"Env","options":["prod","staging"]},{"label":"Reason","kind":"text"}]}\`
- \`cueme pause <agent_id> [prompt | -]\`: waits, without a time limit, until the human clicks
  Continue. Call it when cue tells you to pause.

## Reading the answer
The output of cue is the human's answer: chosen labels one per line, form fields as
\`Label: value\` lines, free text, and paths of attached files to read. If it says the user did not
continue, or that no input arrived, or that it timed out: call \`cueme pause <agent_id>\` and stop
until it returns.
`;

/** What "Belay: Pause Agent" sends: the agent is asked to pause until the human clicks Continue. */
export function pauseInstruction(agentId: string): string {
  return `Pause now: run \`cueme pause ${agentId}\` and wait until I click Continue before you do anything else.`;
}
