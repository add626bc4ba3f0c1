// Configuring agents from the editor: "Add Agent" writes an entry to the belay.agents setting (its
// API key, if any, to SecretStorage; its protocol picked, or found by the agent doctor), "Set Agent Secret" stores the secrets entries refer to.
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { BelayContext } from '../context.ts';
import { AgentSchema, expandCommand, MicroAgentSchema, microAgentSecretTexts } from './core/agents/agents.ts';
import type { DoctorReport } from './core/protocols/doctor.ts';
import { PROTOCOL_DESCRIPTORS, protocolDescriptors } from './core/protocols/descriptors.ts';
import { installedAgent } from './core/protocols/installed/installedAgents.ts';
import { isHttpUrl } from './core/agents/llmSettings.ts';
import type { Prompts } from './prompts.ts';
import { isSecretName, SECRET_NAME_RULE, secretNames, secretReference } from './core/agents/secrets.ts';
import type { RunnerService } from './service.ts';

type ProtocolItem = vscode.QuickPickItem & { protocol?: string; doctor?: true };

/**
 * Asks for a name, a command, the protocol (or finds it with the agent doctor) and an optional
 * API key; returns the new agent's name. An agent the doctor finds speaking nanobot's protocol
 * is offered as a micro-agent instead.
 */
export async function addAgent(ctx: BelayContext, service: RunnerService, prompts: Prompts): Promise<string | undefined> {
  const name = await prompts.input({ title: 'Belay: Add Agent (1/3)', prompt: 'A name for the agent', placeHolder: 'my-agent', validateInput: (v) => (v.trim() ? undefined : 'a name is needed') });
  if (!name?.trim()) return undefined;
  const command = await prompts.input({
    title: 'Belay: Add Agent (2/3)',
    prompt: 'The shell command that starts it (run from the workspace folder). ${node} is the editor’s Node. Leave it empty for a coding CLI Belay installs and runs headless (Claude Code).',
    placeHolder: 'python3 agent.py',
  });
  if (command === undefined) return undefined;
  if (!command.trim()) return addInstalledAgent(ctx, service, prompts, name.trim());
  const protocols = AgentSchema.shape.protocol.options as readonly string[];
  const words = PROTOCOL_DESCRIPTORS as Readonly<Record<string, { title: string; detail: string } | undefined>>;
  const manual = (first?: { protocol: string; note: string }): ProtocolItem[] =>
    [...protocols]
      .sort((a, b) => (a === first?.protocol ? -1 : b === first?.protocol ? 1 : 0))
      .map((p) => ({
        label: p,
        description: `${words[p]?.title ?? p}${p === first?.protocol ? ' · found by the agent doctor' : ''}`,
        detail: p === first?.protocol ? first.note : words[p]?.detail,
        protocol: p,
      }));
  let chosen = await prompts.pick<ProtocolItem>(
    [
      { label: '$(pulse) Find out with the agent doctor', description: 'runs it in a sandbox, once per protocol', detail: 'Tries SDK 1.x, 2.0, 3.0 and nanobot’s protocol, and says what the agent does wrong.', doctor: true },
      ...manual(),
    ],
    { title: 'Belay: Add Agent (3/3)', placeHolder: 'Which protocol does it speak? (the wrong one fails at step 0)' },
  );
  if (!chosen) return undefined;
  if (chosen.doctor) {
    const report = await runDoctor(ctx, prompts, name.trim(), command.trim());
    if (report?.protocol === 'nanobot-rich' || report?.protocol === 'nanobot-plain') return addMicroAgent(ctx, prompts, name.trim(), command.trim(), report);
    const found = report && protocols.includes(report.protocol) ? report.protocol : undefined;
    const note = report ? doctorNote(report) : undefined;
    chosen = await prompts.pick<ProtocolItem>(found ? manual({ protocol: found, note: note! }) : manual(), {
      title: 'Belay: Add Agent (3/3)',
      placeHolder: found ? `The agent doctor found ${found}: press Enter to take it` : report ? `The agent doctor found ${report.protocol === 'none' ? 'no protocol' : report.protocol} (details in the log): choose one` : 'Which protocol does it speak?',
    });
    if (!chosen) return undefined;
  }
  const env: Record<string, string> = {};
  const keyVar = await prompts.input({
    title: 'Belay: Add Agent: API key (optional)',
    prompt: 'If it needs an API key, the environment variable to pass it in (e.g. OPENROUTER_API_KEY); leave empty for none. The key goes to VS Code’s secret storage, never into settings.',
  });
  if (keyVar?.trim()) {
    const value = await prompts.input({ title: `Belay: ${keyVar.trim()}`, prompt: 'The key (stored in secret storage)', password: true });
    if (value) {
      const secretName = keyVar.trim();
      await service.storeSecret(secretName, value);
      env[secretName] = secretReference(secretName);
    }
  }
  const entry = AgentSchema.parse({ name: name.trim(), command: command.trim(), protocol: chosen.protocol, env });
  await addToSetting(ctx, 'agents', entry);
  void vscode.window.showInformationMessage(`Belay: agent '${entry.name}' added to the belay.agents setting.`);
  return entry.name;
}

/**
 * An installed coding CLI as an agent: which one, the model API it reaches through the gateway
 * (its base URL, the model, the key kept in secret storage). No command: Belay installs the CLI.
 */
async function addInstalledAgent(ctx: BelayContext, service: RunnerService, prompts: Prompts, name: string): Promise<string | undefined> {
  const chosen = await prompts.pick<ProtocolItem>(
    protocolDescriptors()
      .filter((d) => d.installed)
      .map((d) => ({ label: d.title, description: d.name, detail: d.detail, protocol: d.name })),
    { title: 'Belay: Add Agent (3/3)', placeHolder: 'Which coding CLI? Belay installs its pinned version on first use' },
  );
  if (!chosen) return undefined;
  const described = installedAgent(chosen.protocol ?? '');
  if (!described) return undefined;
  const anthropic = described.api === 'messages';
  const upstream = await prompts.input({
    title: `Belay: ${described.title}: model API`,
    prompt: `The base URL of the ${anthropic ? 'Anthropic' : described.api} API it calls through Belay's gateway (its one way out of the run). Empty: belay.runner.llm's.`,
    value: anthropic ? 'https://api.anthropic.com' : '',
    validateInput: (v) => (v.trim() === '' || isHttpUrl(v.trim()) ? undefined : 'an http:// or https:// URL'),
  });
  if (upstream === undefined) return undefined;
  const model = await prompts.input({ title: `Belay: ${described.title}: model`, prompt: `The model it asks for (empty: ${described.defaultModel})`, placeHolder: described.defaultModel });
  if (model === undefined) return undefined;
  const llm: Record<string, string> = {};
  if (upstream.trim()) {
    llm.upstream = upstream.trim();
    if (anthropic) llm.api = 'anthropic';
    const key = await prompts.input({ title: `Belay: ${described.title}: API key (optional)`, prompt: 'The upstream’s API key, kept in VS Code’s secret storage; the CLI only ever gets a per-run token.', password: true });
    if (key) {
      const secretName = anthropic ? 'ANTHROPIC_API_KEY' : 'OPENAI_API_KEY';
      await service.storeSecret(secretName, key);
      llm.keySecret = secretName;
    }
  }
  if (model.trim()) llm.model = model.trim();
  const entry = AgentSchema.parse({ name, protocol: described.name, ...(Object.keys(llm).length > 0 ? { llm } : {}) });
  const setting = { name: entry.name, protocol: entry.protocol, ...(entry.llm ? { llm: entry.llm } : {}) };
  await addToSetting(ctx, 'agents', setting);
  void vscode.window.showInformationMessage(`Belay: agent '${entry.name}' (${described.title}) added to the belay.agents setting; Belay installs ${described.title} ${described.version} the first time it runs.`);
  return entry.name;
}

/** Adds (or replaces, by name) an entry of `belay.agents` or `belay.microAgents`. */
async function addToSetting(ctx: BelayContext, key: 'agents' | 'microAgents', entry: { name: string }): Promise<void> {
  const current = ctx.config.get(key);
  const kept = (Array.isArray(current) ? current : []).filter((a) => (a as { name?: unknown } | null)?.name !== entry.name);
  const target = vscode.workspace.workspaceFolders?.length ? vscode.ConfigurationTarget.Workspace : vscode.ConfigurationTarget.Global;
  await vscode.workspace.getConfiguration('belay').update(key, [...kept, entry], target);
}

/** The doctor's findings in one line, for a pick's detail. */
function doctorNote(report: DoctorReport): string {
  return report.problems.length > 0 ? `But: ${report.problems.join('; ')}` : 'Nothing wrong seen.';
}

/**
 * Runs the agent doctor on the command, from the workspace folder, in the sandbox (or, where there
 * is none, unisolated if the person says so), with a cancellable progress. Undefined when
 * refused or cancelled. The report goes to the log.
 */
async function runDoctor(ctx: BelayContext, prompts: Prompts, name: string, command: string): Promise<DoctorReport | undefined> {
  if (!ctx.trust.require('runAgents')) return undefined;
  const { BackendUnavailableError } = await import('./core/backends/backend.ts');
  const { sandboxBackend } = await import('./core/backends/sandbox.ts');
  let backend;
  try {
    backend = await sandboxBackend();
  } catch (error) {
    if (!(error instanceof BackendUnavailableError)) throw error;
    const choice = await prompts.ask(
      `Belay: ${error.message}`,
      'Without the sandbox the agent runs unisolated: it can read and write whatever you can and reach the network.',
      'Probe Unisolated',
    );
    if (choice !== 'Probe Unisolated') return undefined;
    backend = (await import('./core/backends/local.ts')).localBackend();
  }
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath ?? process.cwd();
  // The agent's folder as a run finds it: its program's folder (named from the workspace folder), never the home folder or /.
  const { AgentFolderError, resolveAgentFolder } = await import('./core/agents/agentFolder.ts');
  let agentFolder;
  try {
    agentFolder = resolveAgentFolder({ command: expandCommand(command, process.execPath, folder), base: folder, option: `"cwd" in agent '${name}'`, isolated: backend.isolated });
  } catch (error) {
    if (error instanceof AgentFolderError) throw new Error(error.message);
    throw error;
  }
  const { diagnoseAgent } = await import('./core/protocols/doctor.ts');
  const chosen = backend;
  const report = await prompts.progress(`Belay: checking which protocol ${name} speaks`, async (progress, signal) => {
    const found = await diagnoseAgent({
      agentCommand: agentFolder.command,
      agentCwd: agentFolder.dir,
      agentFolders: [path.dirname(process.execPath)],
      backend: chosen,
      signal,
      onProgress: progress,
    });
    return signal.aborted ? undefined : found;
  });
  if (!report) return undefined;
  ctx.log.info(
    [`agent doctor on '${name}' (${command}) with ${chosen.label}: ${report.protocol}${report.clear ? '' : ' (unclear)'}`, ...report.probes.map((p) => `  ${p.probe}: ${p.summary}`), ...report.problems.map((p) => `  problem: ${p}`)].join('\n'),
  );
  return report;
}

/** An agent that speaks nanobot's protocol: offered as a micro-agent for the chat. */
async function addMicroAgent(ctx: BelayContext, prompts: Prompts, name: string, command: string, report: DoctorReport): Promise<undefined> {
  const protocol = report.protocol === 'nanobot-rich' ? 'rich' : 'plain';
  const add = await prompts.pick([{ label: 'Add as a micro-agent', description: `nanobot ${protocol} protocol`, detail: doctorNote(report), add: true }, { label: 'Cancel' }], {
    title: `Belay: ${name} speaks nanobot’s terminal protocol (${protocol})`,
    placeHolder: 'It is a micro-agent to chat with (Belay: Chat with Micro-agent), not an agent for tasks',
  });
  if (!add || !('add' in add)) return undefined;
  const entry = MicroAgentSchema.parse({ name, command, protocol });
  await addToSetting(ctx, 'microAgents', entry);
  void vscode.window.showInformationMessage(`Belay: micro-agent '${name}' added to the belay.microAgents setting.`);
  return undefined;
}

/**
 * Stores a secret. With a name and a value (programmatic use), stores it without asking (an empty
 * value removes it); it is write-only: no command ever reads a secret back. Otherwise asks which
 * secret (those agents refer to first) and its value.
 */
export async function setSecret(service: RunnerService, nameArg?: unknown, valueArg?: unknown): Promise<void> {
  if (typeof nameArg === 'string' && typeof valueArg === 'string') {
    if (!isSecretName(nameArg)) throw new Error(`'${nameArg}' is not a secret name (${SECRET_NAME_RULE})`);
    await service.storeSecret(nameArg, valueArg);
    return;
  }
  let name = typeof nameArg === 'string' ? nameArg : undefined;
  if (!name) {
    // The model keys agents' runs use through the gateway count as referenced too.
    const llmKeys = service.llmKeySecrets().map(secretReference);
    const referenced = secretNames([...service.agents.flatMap((agent) => Object.values(agent.env)), ...service.microAgents.flatMap(microAgentSecretTexts), ...llmKeys]);
    const items = referenced.map((label) => ({ label, description: 'referenced by an agent' }));
    const pick = await vscode.window.showQuickPick([...items, { label: '$(add) Another name…', description: '' }], {
      title: 'Belay: Set Agent Secret',
      placeHolder: `Which secret? Agents refer to it as ${secretReference('NAME')}`,
    });
    if (!pick) return;
    name = pick.label.startsWith('$(add)')
      ? await vscode.window.showInputBox({ prompt: `Secret name (${SECRET_NAME_RULE})`, validateInput: (v) => (isSecretName(v) ? undefined : `${SECRET_NAME_RULE} only`) })
      : pick.label;
    if (!name) return;
  }
  const value = await vscode.window.showInputBox({ title: `Belay: secret ${name}`, prompt: 'The value (kept in VS Code’s secret storage). Empty removes it.', password: true });
  if (value === undefined) return;
  await service.storeSecret(name, value);
}

/**
 * Opens the settings file that defines the agent `name` (the workspace's, else the user's) at its
 * entry of belay.agents; the Settings editor at belay.agents when no file names it.
 */
export async function openAgentSetting(name: string): Promise<void> {
  const inspected = vscode.workspace.getConfiguration('belay').inspect<unknown>('agents');
  const names = (list: unknown) => Array.isArray(list) && list.some((a) => (a as { name?: unknown } | null)?.name === name);
  const command = names(inspected?.workspaceFolderValue) || names(inspected?.workspaceValue) ? 'workbench.action.openWorkspaceSettingsFile' : names(inspected?.globalValue) ? 'workbench.action.openSettingsJson' : undefined;
  if (!command) {
    await vscode.commands.executeCommand('workbench.action.openSettings', 'belay.agents');
    return;
  }
  await vscode.commands.executeCommand(command);
  const editor = vscode.window.activeTextEditor;
  if (!editor) return;
  const text = editor.document.getText();
  const settingAt = text.indexOf('"belay.agents"');
  const entry = new RegExp(`"name"\\s*:\\s*${JSON.stringify(name).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`, 'g');
  entry.lastIndex = Math.max(0, settingAt);
  const found = entry.exec(text);
  if (!found) return;
  const position = editor.document.positionAt(found.index);
  editor.selection = new vscode.Selection(position, editor.document.lineAt(position.line).range.end);
  editor.revealRange(new vscode.Range(position, position), vscode.TextEditorRevealType.InCenter);
}
