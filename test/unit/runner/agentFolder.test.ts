// The agent's folder found from the program its command names (real folders and files in a
// temporary tree; the home folder is one of them).
import assert from 'node:assert/strict';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { agentProgram, AgentFolderError, resolveAgentFolder, resolveMicroAgentFolder } from '../../../src/runner/core/agents/agentFolder.ts';
import { tempDir } from '../../support/runner/helpers.ts';

const tmp = tempDir('belay-agent-folder-');
after(() => tmp.remove());
const home = path.join(tmp.dir, 'home');
const agents = path.join(tmp.dir, 'agents');
const elsewhere = path.join(tmp.dir, 'elsewhere');
for (const dir of [path.join(home, '.ssh'), path.join(home, 'proj'), agents, elsewhere, path.join(tmp.dir, 'tasks', 't1')]) mkdirSync(dir, { recursive: true });
writeFileSync(path.join(home, '.ssh', 'id_rsa'), 'SECRET');
writeFileSync(path.join(home, 'loose.py'), '');
writeFileSync(path.join(home, 'proj', 'a.py'), '');
writeFileSync(path.join(agents, 'a.py'), '');
writeFileSync(path.join(agents, 'my agent.mjs'), '');
writeFileSync(path.join(tmp.dir, 'tasks', 't1', 'cheat.py'), '');
symlinkSync(path.join(home, '.ssh'), path.join(agents, 'keys'));

const resolve = (command: string, base: string, more: { given?: string; hidden?: string[] } = {}) => resolveAgentFolder({ command, base, home, option: '--agent-dir DIR', ...more });
const refusal = (fn: () => unknown): string => {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof AgentFolderError, String(error));
    assert.doesNotMatch(error.message, /\n/);
    return error.message;
  }
  assert.fail('expected a refusal');
};

describe('the program an agent command names', () => {
  it('is the first word when it is a path, or the script of a known interpreter', () => {
    const named = (command: string) => agentProgram(command, '/base')?.named;
    assert.equal(named('/opt/agent/run --fast'), '/opt/agent/run');
    assert.equal(named('./agent'), './agent');
    assert.equal(named('python3 /home/me/agents/a.py'), '/home/me/agents/a.py');
    assert.equal(named('python3 -u a.py --x 1'), 'a.py');
    assert.equal(named('/usr/bin/python3 a.py'), 'a.py');
    assert.equal(named("node --require ./hook.js 'dist/my agent.js'"), 'dist/my agent.js');
    assert.equal(named('bash run.sh'), 'run.sh');
    assert.equal(named('uv run a.py'), 'a.py');
    assert.equal(named('uv run python agents/a.py'), 'agents/a.py');
    assert.equal(named('npx tsx src/a.ts'), 'src/a.ts');
    assert.equal(named('deno run --allow-net a.ts'), 'a.ts');
    assert.equal(named('FOO=1 env python3 a.py {message}'), 'a.py');
    // Nothing is guessed: code on the command line, a module, a program on PATH, what the shell expands.
    for (const none of ['python3 -c "print(1)"', 'python3 -m agent', 'bash -lc "x"', 'my-agent --go', 'cd x && python3 a.py', 'python3 $HOME/a.py', 'python3 ~/a.py', 'node', "python3 'open"]) {
      assert.equal(named(none), undefined, none);
    }
  });

  it('is named absolutely in the command it gives back, quoted for the shell', () => {
    assert.equal(agentProgram('python3 a.py --x', '/base dir')?.command, "python3 '/base dir/a.py' --x");
    assert.equal(agentProgram('node ../b/a.js', '/base/x')?.command, 'node /base/b/a.js');
    assert.equal(agentProgram('/abs/a', '/base')?.command, '/abs/a');
  });
});

describe('the agent folder', () => {
  it('is the folder of the program, named absolutely or from where Belay started', () => {
    assert.equal(resolve(`python3 ${agents}/a.py`, elsewhere).dir, agents);
    const relative = resolve('python3 ../agents/a.py', elsewhere);
    assert.equal(relative.dir, agents);
    assert.equal(relative.command, `python3 ${agents}/a.py`);
    assert.match(relative.notice ?? '', /its program's \(--agent-dir DIR sets another\)/);
    assert.equal(resolve(`node '${agents}/my agent.mjs'`, home).dir, agents);
  });

  it('is the current folder when the command names no program', () => {
    assert.equal(resolve('my-agent --go', elsewhere).dir, elsewhere);
  });

  it('is never the home folder or /: narrowed to the program, or refused in one line naming --agent-dir', () => {
    assert.equal(resolve('python3 proj/a.py', home).dir, path.join(home, 'proj'));
    assert.match(refusal(() => resolve('my-agent', home)), /^the agent's folder would be .*home, which is your home folder and is never shown whole to the agent: give --agent-dir DIR/);
    assert.match(refusal(() => resolve('python3 loose.py', home)), /^the agent's program .*home\/loose\.py lies in .*home, which is your home folder .*--agent-dir DIR$/);
    assert.match(refusal(() => resolve('my-agent', '/')), /which is \/ and is never shown whole/);
    assert.match(refusal(() => resolve('my-agent', elsewhere, { given: home })), /^the agent's folder .*home is your home folder, which is never shown whole to the agent: give --agent-dir DIR/);
    assert.match(refusal(() => resolve('my-agent', elsewhere, { given: tmp.dir })), /holds your home folder/);
    assert.match(refusal(() => resolve('my-agent', elsewhere, { given: '/' })), /\/ is \//);
  });

  it('reports a program the agent would not find, with the path and the option', () => {
    assert.match(refusal(() => resolve('python3 nothere.py', elsewhere)), new RegExp(`^the agent's program ${elsewhere}/nothere\\.py does not exist .*--agent-dir DIR`));
    assert.match(refusal(() => resolve(`python3 ${agents}/a.py`, elsewhere, { given: elsewhere })), new RegExp(`^the agent's program ${agents}/a\\.py is outside the agent's folder ${elsewhere}, so the agent would not find it: give --agent-dir DIR ${agents}$`));
    assert.match(refusal(() => resolve(`python3 ${tmp.dir}/tasks/t1/cheat.py`, elsewhere, { hidden: [path.join(tmp.dir, 'tasks', 't1')] })), /lies in .*tasks\/t1, which the agent must not see/);
    // Through a symlink into the home's keys: the real file is outside the folder shown.
    writeFileSync(path.join(home, '.ssh', 'run.py'), '');
    assert.match(refusal(() => resolve(`python3 ${agents}/keys/run.py`, elsewhere, { given: agents })), /is outside the agent's folder/);
    // A relative program with --agent-dir is named from that folder, where the agent starts.
    assert.equal(resolve('python3 a.py', elsewhere, { given: agents }).dir, agents);
  });
});

describe('a micro-agent folder', () => {
  const micro = (command: string, workspace: string, more: { given?: string; isolated?: boolean } = {}) => resolveMicroAgentFolder({ command, workspace, cwd: workspace, home, isolated: true, ...more });
  it('is its program’s folder, named from its workspace', () => {
    assert.equal(micro(`python3 ${agents}/a.py {message}`, elsewhere), agents);
    assert.equal(micro('python3 ../agents/a.py {message}', elsewhere), agents);
    assert.equal(micro('sh -c "echo hi"', elsewhere), elsewhere);
  });

  it('is never the home folder, and a program it would not find is said in one line', () => {
    assert.match(refusal(() => micro('python3 loose.py', home)), /^the micro-agent's program .*loose\.py lies in .*home, which is your home folder .*--agent-dir DIR$/);
    assert.match(refusal(() => micro('python3 gone.py', elsewhere)), /^the micro-agent's program .*gone\.py does not exist/);
    assert.match(refusal(() => micro(`python3 ${agents}/a.py`, elsewhere, { given: elsewhere })), /is outside its folder .* give --agent-dir DIR/);
    // On the host (local, chosen by name) nothing is shown, so nothing is refused.
    assert.equal(micro('python3 loose.py', home, { isolated: false }), home);
  });
});
