import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AgentSchema, expandCommand, MicroAgentSchema, nodeInvocation, parseAgentsFile, parseList, terminalConfig, uniqueByName } from '../../../src/runner/core/agents/agents.ts';
import { fillEnv, MissingSecretError, secretNames } from '../../../src/runner/core/agents/secrets.ts';

describe('agent configuration', () => {
  it('keeps good entries and reports each bad one with where it is and what is wrong', () => {
    const parsed = parseList(
      [{ name: 'a', command: 'python3 a.py', protocol: 'sdk1' }, { name: 'b', command: 'x' }, { name: '', command: 'y', protocol: 'sdk2' }, 'junk'],
      AgentSchema,
      'setting belay.agents',
      '/ws',
    );
    assert.deepEqual(parsed.items.map((a) => [a.name, a.protocol, a.baseDir, a.env]), [['a', 'sdk1', '/ws', {}]]);
    assert.equal(parsed.problems.length, 3);
    assert.match(parsed.problems[0]!, /^setting belay\.agents\[1\]: protocol: /);
    assert.match(parsed.problems[1]!, /^setting belay\.agents\[2\]: name: an agent needs a name/);
    assert.deepEqual(parseList({ not: 'a list' }, AgentSchema, 's', '/').problems, ['s: expected a list']);
  });

  it('reads belay-agents.json relative to its folder and names the file when it is broken', () => {
    const ok = parseAgentsFile(
      JSON.stringify({ agents: [{ name: 'x', command: '${node} a.mjs', protocol: 'sdk2' }], microAgents: [{ name: 'm', command: 'bot {message}', protocol: 'rich' }] }),
      '/ws/agents/belay-agents.json',
    );
    assert.equal(ok.agents.items[0]!.baseDir, '/ws/agents');
    assert.equal(ok.microAgents.items[0]!.timeout, 120, 'nanobot defaults apply');
    assert.equal(ok.microAgents.items[0]!.passMedia, true);
    const broken = parseAgentsFile('{ "agents": [', '/ws/belay-agents.json');
    assert.match(broken.agents.problems[0]!, /^\/ws\/belay-agents\.json: not valid JSON/);
  });

  it('settings win over files with the same agent name', () => {
    const merged = uniqueByName([[{ name: 'a', from: 'settings' }], [{ name: 'a', from: 'file' }, { name: 'b', from: 'file' }]]);
    assert.deepEqual(merged, [{ name: 'a', from: 'settings' }, { name: 'b', from: 'file' }]);
  });

  it('fills ${secret:NAME} from the secrets given and refuses to run with a missing one, naming it', () => {
    const env = { KEY: '${secret:openrouter}', MIXED: 'Bearer ${secret:openrouter}', PLAIN: 'x' };
    assert.deepEqual(secretNames(Object.values(env)), ['openrouter']);
    assert.deepEqual(fillEnv(env, new Map([['openrouter', 'sk-1']]), 'agent a'), { KEY: 'sk-1', MIXED: 'Bearer sk-1', PLAIN: 'x' });
    assert.throws(() => fillEnv(env, new Map(), "agent 'a'"), (e: unknown) => e instanceof MissingSecretError && e.secret === 'openrouter' && /agent 'a' needs the secret 'openrouter'.*Set Agent Secret/.test(e.message));
  });

  it('expands ${node} and ${dir} as single shell words, even with quotes in the path', () => {
    assert.equal(expandCommand('${node} ${dir}/a.mjs --x', "/opt/it's/node", '/ws/my agents'), `'/opt/it'\\''s/node' '/ws/my agents'/a.mjs --x`);
  });

  it('runs ${node} as Node on Electron (desktop VS Code) and as itself on Node (code-server)', () => {
    assert.equal(nodeInvocation('/usr/share/code/code', true), "ELECTRON_RUN_AS_NODE=1 '/usr/share/code/code'");
    assert.equal(nodeInvocation('/opt/node/bin/node', false), "'/opt/node/bin/node'");
  });

  it('builds the core terminal config of a micro-agent with secrets in env and provider keys', () => {
    const agent = { ...MicroAgentSchema.parse({ name: 'm', command: '${node} bot.mjs', env: { T: '${secret:t}' }, providers: { openai: { apiKeys: ['${secret:k}'] } } }), baseDir: '/b' };
    const config = terminalConfig(agent, new Map([['t', 'tv'], ['k', 'kv']]), '/n');
    assert.equal(config.command, `'/n' bot.mjs`);
    assert.deepEqual(config.env, { T: 'tv' });
    assert.deepEqual(config.providers.openai!.apiKeys, ['kv']);
    assert.equal(config.enabled, true);
  });
});
