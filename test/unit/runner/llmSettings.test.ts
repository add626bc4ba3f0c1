import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { chooseLlm, parsePrices } from '../../../src/runner/core/agents/llmSettings.ts';
import { AgentSchema } from '../../../src/runner/core/agents/agents.ts';

describe('the model API a run may call, from settings', () => {
  it('takes the agent’s own fields over the default, field by field', () => {
    const choice = chooseLlm({ budgetUsd: 0.5 }, { upstream: 'https://openrouter.ai/api/v1', keySecret: 'OPENROUTER', budgetUsd: 2, budgetTokens: 1000 }, 'agent a');
    assert.deepEqual(choice, { baseUrl: 'https://openrouter.ai/api/v1', api: 'openai', keySecret: 'OPENROUTER', budget: { usd: 0.5, tokens: 1000 } });
    const anthropic = chooseLlm({ upstream: 'https://api.anthropic.com', api: 'anthropic', keySecret: 'ANTHROPIC' }, { upstream: 'https://openrouter.ai/api/v1', keySecret: 'OPENROUTER' }, 'agent b');
    assert.deepEqual(anthropic, { baseUrl: 'https://api.anthropic.com', api: 'anthropic', keySecret: 'ANTHROPIC', budget: {} });
  });

  it('gives no model access when nothing names an upstream, and an empty agent field does not hide the default', () => {
    assert.equal(chooseLlm(undefined, {}, 'agent a'), undefined);
    assert.equal(chooseLlm({ keySecret: 'K' }, undefined, 'agent a'), undefined);
    const fallback = chooseLlm({ upstream: '' }, { upstream: 'http://127.0.0.1:9/v1' }, 'agent a');
    assert.ok(fallback && 'baseUrl' in fallback);
    assert.equal(fallback.baseUrl, 'http://127.0.0.1:9/v1');
  });

  it('refuses bad settings with one line naming the field and where it is', () => {
    assert.throws(() => chooseLlm({ upstream: 'file:///etc/passwd' }, {}, 'agent a'), /^Error: agent a: llm: upstream: must be an http:\/\/ or https:\/\/ URL, or "vscode-lm"$/);
    assert.throws(() => chooseLlm({}, { upstream: 'https://user:pw@host/v1' }, 'agent a'), /belay\.runner\.llm: upstream: must be/);
    assert.throws(() => chooseLlm({ keySecret: 'no spaces please' }, {}, 'agent a'), /keySecret: a secret name/);
    assert.throws(() => chooseLlm({ budgetUsd: -1 }, {}, 'agent a'), /budgetUsd/);
    assert.throws(() => chooseLlm({ key: 'sk-real' }, {}, 'agent a'), /agent a: llm: .*key/);
    assert.throws(() => parsePrices({ 'gpt-x': { input: 'cheap', output: 1 } }), /^Error: belay\.runner\.llmPrices: gpt-x\.input:/);
    assert.deepEqual(parsePrices({ 'gpt-x': { input: 1, output: 2 } }), { 'gpt-x': { input: 1, output: 2 } });
    assert.deepEqual(parsePrices(undefined), {});
  });

  it('chooses a model VS Code offers by vendor/id, with the budget and no key; one line when none is named', () => {
    assert.deepEqual(chooseLlm(undefined, { upstream: 'vscode-lm', vscodeModel: 'copilot/gpt-4o', budgetTokens: 5000, keySecret: 'IGNORED' }, 'agent a'), { vscodeModel: 'copilot/gpt-4o', budget: { tokens: 5000 } });
    // An agent's own URL wins over the default's VS Code model, and the other way round.
    const own = chooseLlm({ upstream: 'http://127.0.0.1:9/v1' }, { upstream: 'vscode-lm', vscodeModel: 'copilot/gpt-4o' }, 'agent a');
    assert.ok(own && 'baseUrl' in own);
    assert.deepEqual(chooseLlm({ upstream: 'vscode-lm', vscodeModel: 'test/m' }, { upstream: 'https://api.openai.com/v1' }, 'agent a'), { vscodeModel: 'test/m', budget: {} });
    assert.throws(() => chooseLlm(undefined, { upstream: 'vscode-lm' }, 'agent a'), /^Error: belay\.runner\.llm: upstream "vscode-lm" needs a vscodeModel \(run Belay: Choose a VS Code Model for Runs…\)$/);
    assert.throws(() => chooseLlm({ upstream: 'vscode-lm' }, {}, 'agent a'), /^Error: agent a: llm: upstream "vscode-lm" needs a vscodeModel/);
    assert.throws(() => chooseLlm(undefined, { upstream: 'vscode-lm', vscodeModel: 'no-slash' }, 'agent a'), /vscodeModel: must be "vendor\/id"/);
  });

  it('is part of an agent’s entry, so a bad llm field names the agent entry', () => {
    assert.equal(AgentSchema.safeParse({ name: 'a', command: 'x', protocol: 'sdk1', llm: { upstream: 'ftp://x' } }).success, false);
    assert.deepEqual(AgentSchema.parse({ name: 'a', command: 'x', protocol: 'sdk1', llm: { upstream: 'http://127.0.0.1:1/v1' } }).llm, { upstream: 'http://127.0.0.1:1/v1' });
  });
});
