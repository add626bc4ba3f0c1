// `belay cues list|answer`: answer agents' cues without the panel (over SSH, from scripts).
import { parseCommandLine, splitAction } from '../shared/args.ts';
import { UsageError, type CliIO } from './io.ts';
import { existingFile } from './paths.ts';
import { composeAnswerText, SelectionError, selectionIsEmpty, type Selection } from '../cues/core/answer.ts';
import { MailboxError } from '../cues/core/errors.ts';
import { describePayload } from '../cues/core/payload.ts';
import { silenceSqliteExperimentalWarning } from '../cues/core/sqlite.ts';
import { Mailbox, type CueEntry } from '../cues/core/store.ts';
import { formatAge } from '../cues/core/time.ts';
import type { Liveness } from '../cues/core/waiters.ts';

/** Printed by `belay cues --help` (and when no action is given). */
export const usage = `Usage:
  belay cues list [--json]
      Pending cues, oldest first: request id, agent id, age, payload and prompt.
  belay cues answer <request_id> [--text T] [--choice LABEL]... [--confirm] [--cancel]
                    [--field "Label=value"]... [--attach FILE]...
      Answers a pending cue exactly as the Cues panel does:
        --choice LABEL       a choice option (repeat for a multiple choice)
        --confirm            the confirm button of a confirm, or Continue of a pause
        --field Label=value  a form field (repeat a label for a multi-select field)
        --text T             free text: the answer of a plain prompt, or a line after the others
        --attach FILE        a file the agent should read (repeatable)
        --cancel             end the cue without an answer (the agent is told to pause)

The mailbox is ~/.cue/cue.db (CUE_HOME moves it). Exit codes: 0 answered, 1 unknown or
already answered request (or a mailbox error), 2 usage error.
`;

export async function run(args: string[], io: CliIO): Promise<number> {
  const { action, rest } = splitAction(args, ['list', 'answer']);
  if (action === undefined) {
    io.stdout.write(usage);
    return 2;
  }
  silenceSqliteExperimentalWarning();
  try {
    return action === 'list' ? list(rest, io) : await answer(rest, io);
  } catch (error) {
    if (error instanceof SelectionError) throw new UsageError(error.message);
    if (error instanceof MailboxError) {
      io.stderr.write(`belay cues: ${error.message}\n`);
      return 1;
    }
    throw error;
  }
}

function listJson(entry: CueEntry, now: number, waiter: Liveness): Record<string, unknown> {
  let payload: unknown = null;
  try {
    payload = entry.payloadJson === null ? null : JSON.parse(entry.payloadJson);
  } catch {
    payload = entry.payloadJson;
  }
  return {
    request_id: entry.requestId,
    agent_id: entry.agentId,
    prompt: entry.prompt,
    payload,
    payload_kind: entry.payload.kind,
    ...(entry.payload.kind === 'invalid' ? { payload_warning: entry.payload.warning } : {}),
    created_at: entry.createdAt ?? null,
    age_seconds: entry.createdAtMs === undefined ? null : Math.max(0, Math.round((now - entry.createdAtMs) / 1000)),
    // alive, gone (abandoned: it cannot be answered) or unknown (written by a tool that records no waiter).
    waiter,
  };
}

function list(args: string[], io: CliIO): number {
  const { values, positionals } = parseCommandLine(args, { json: { type: 'boolean' } });
  if (positionals.length > 0) throw new UsageError(`list takes no arguments, got "${positionals[0]}"`);
  const mailbox = Mailbox.open({ env: io.env });
  try {
    const pending = mailbox.listRequests({ pendingOnly: true });
    const now = Date.now();
    if (values.json) {
      io.stdout.write(`${JSON.stringify(pending.map((e) => listJson(e, now, mailbox.liveness(e, now))), null, 2)}\n`);
      return 0;
    }
    if (pending.length === 0) {
      io.stdout.write(`No pending cues in ${mailbox.paths.dbPath}.\n`);
      return 0;
    }
    for (const entry of pending) {
      const age = entry.createdAtMs === undefined ? 'age unknown' : `waiting ${formatAge(now - entry.createdAtMs)}`;
      const abandoned = mailbox.liveness(entry, now) === 'gone' ? '  ABANDONED: its waiting process is gone, so it cannot be answered' : '';
      io.stdout.write(`${entry.requestId}  agent ${entry.agentId || '(none)'}  ${age}${abandoned}\n`);
      io.stdout.write(`  ${describePayload(entry.payload)}\n`);
      for (const line of entry.prompt.split('\n')) io.stdout.write(`  | ${line}\n`);
      io.stdout.write('\n');
    }
    return 0;
  } finally {
    mailbox.close();
  }
}

function splitField(value: string): [label: string, value: string] {
  const at = value.indexOf('=');
  if (at <= 0) throw new UsageError(`--field takes "Label=value", got "${value}"`);
  return [value.slice(0, at).trim(), value.slice(at + 1).trim()];
}

async function answer(args: string[], io: CliIO): Promise<number> {
  const { values, positionals } = parseCommandLine(args, {
    text: { type: 'string' },
    choice: { type: 'string', multiple: true },
    confirm: { type: 'boolean' },
    cancel: { type: 'boolean' },
    field: { type: 'string', multiple: true },
    attach: { type: 'string', multiple: true },
  });
  const [requestId, ...extra] = positionals;
  if (!requestId) throw new UsageError('answer needs the request id (see "belay cues list")');
  if (extra.length > 0) throw new UsageError(`answer takes one request id, got also "${extra[0]}"`);
  const selection: Selection = {};
  if (values.text !== undefined) selection.text = values.text;
  if (values.choice) selection.choices = values.choice;
  if (values.confirm) selection.confirm = true;
  if (values.field) selection.fields = values.field.map(splitField);
  const attachments = (values.attach ?? []).map((file) => existingFile(file, '--attach', io.cwd));

  const mailbox = Mailbox.open({ env: io.env });
  try {
    if (values.cancel) {
      if (!selectionIsEmpty(selection) || attachments.length > 0) throw new UsageError('--cancel ends the cue without an answer: it cannot be combined with other options');
      mailbox.cancel(requestId);
      io.stdout.write(`Cancelled ${requestId}.\n`);
      return 0;
    }
    if (selectionIsEmpty(selection) && attachments.length === 0) {
      throw new UsageError('say what to answer: --text, --choice, --confirm, --field, --attach, or --cancel');
    }
    const entry = mailbox.getRequest(requestId);
    if (!entry) throw new MailboxError('unknown-request', `no request ${requestId} in the mailbox ${mailbox.paths.dbPath}`);
    if (entry.state !== 'pending') throw new MailboxError('already-answered', `request ${requestId} was already ${entry.state === 'closed' ? `closed (${entry.status})` : entry.state}; nothing was written`);
    const text = composeAnswerText(entry.payload, selection);
    await mailbox.answer(requestId, { text, attachments });
    io.stdout.write(`Answered ${requestId}.\n`);
    return 0;
  } finally {
    mailbox.close();
  }
}
