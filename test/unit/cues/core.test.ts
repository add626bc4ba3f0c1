import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { composeAnswerText, SelectionError } from '../../../src/cues/core/answer.ts';
import { EnvelopeError, parseEnvelope } from '../../../src/cues/core/envelope.ts';
import { detectTerminal, newAgentId, normalizeRuntime, renderResponse } from '../../../src/cues/core/hap.ts';
import { parsePayload, PAUSE_PAYLOAD_JSON } from '../../../src/cues/core/payload.ts';
import { localIsoWithOffset, parseMailboxTime } from '../../../src/cues/core/time.ts';

describe('payload schemas', () => {
  it('reads each protocol payload kind', () => {
    assert.equal(parsePayload(null).kind, 'none');
    assert.equal(parsePayload('null').kind, 'none');
    const choice = parsePayload('{"type":"choice","options":["Continue","Stop"]}');
    assert.equal(choice.kind, 'choice');
    assert.equal(parsePayload('{"type":"confirm","text":"Continue?"}').kind, 'confirm');
    assert.equal(parsePayload(PAUSE_PAYLOAD_JSON).kind, 'pause');
    const form = parsePayload('{"type":"form","fields":[{"label":"Env","options":["prod","staging"]}]}');
    assert.equal(form.kind, 'form');
  });

  it('degrades an invalid payload to a plain prompt with a warning, never throws', () => {
    for (const raw of ['{not json', '[1,2]', '{"type":"choice"}', '{"type":"choice","options":[]}', '{"type":"poll"}', '{"type":"form","fields":[{"kind":"text"}]}', '42']) {
      const view = parsePayload(raw);
      assert.equal(view.kind, 'invalid', raw);
      assert.ok(view.kind === 'invalid' && view.warning.length > 0);
    }
    const missingOptions = parsePayload('{"type":"choice"}');
    assert.ok(missingOptions.kind === 'invalid' && missingOptions.warning.includes('options'), 'the warning says where');
  });
});

describe('answer text (the public console\'s rules)', () => {
  const choice = parsePayload('{"type":"choice","options":["A","B","C"],"allow_multiple":true}');
  const single = parsePayload('{"type":"choice","options":["Yes","No"]}');
  const form = parsePayload('{"type":"form","fields":[{"label":"Env","options":["prod","staging"]},{"label":"Regions","options":["eu","us","ap"],"allow_multiple":true},{"label":"Note"}]}');

  it('choice: the labels, one per line, in option order', () => {
    assert.equal(composeAnswerText(choice, { choices: ['C', 'A'] }), 'A\nC');
    assert.equal(composeAnswerText(single, { choices: ['No'] }), 'No');
    assert.equal(composeAnswerText(single, { choices: ['No'], text: 'because' }), 'No\nbecause');
  });

  it('choice: refuses unknown labels and several labels for a single choice', () => {
    assert.throws(() => composeAnswerText(single, { choices: ['Maybe'] }), SelectionError);
    assert.throws(() => composeAnswerText(single, { choices: ['Yes', 'No'] }), /takes one option/);
  });

  it('form: "Label: value" lines, "Label: a, b" for multi-select, in field order', () => {
    const text = composeAnswerText(form, { fields: [['Note', 'ship it'], ['Regions', 'us'], ['Env', 'prod'], ['Regions', 'eu']] });
    assert.equal(text, 'Env: prod\nRegions: eu, us\nNote: ship it');
    assert.throws(() => composeAnswerText(form, { fields: [['Env', 'dev']] }), /not an option/);
    assert.throws(() => composeAnswerText(form, { fields: [['Env', 'prod'], ['Env', 'staging']] }), /takes one value/);
    assert.throws(() => composeAnswerText(form, { fields: [['Missing', 'x']] }), /no field "Missing"/);
  });

  it('confirm: its confirm label (default "Confirm"); pause: empty text', () => {
    assert.equal(composeAnswerText(parsePayload('{"type":"confirm","text":"Go?","confirm_label":"Ship"}'), { confirm: true }), 'Ship');
    assert.equal(composeAnswerText(parsePayload('{"type":"confirm","text":"Go?"}'), { confirm: true }), 'Confirm');
    assert.equal(composeAnswerText(parsePayload(PAUSE_PAYLOAD_JSON), { confirm: true }), '');
  });

  it('refuses parts that do not fit the payload', () => {
    assert.throws(() => composeAnswerText(parsePayload(null), { choices: ['A'] }), /not a choice/);
    assert.throws(() => composeAnswerText(single, { confirm: true }), /not a confirm/);
    assert.throws(() => composeAnswerText(single, { fields: [['a', 'b']] }), /not a form/);
    assert.equal(composeAnswerText(parsePayload('{broken'), { text: ' free text ' }), 'free text');
  });
});

describe('stdin envelope', () => {
  it('reads prompt and payload blocks and re-serialises the payload compactly', () => {
    const env = parseEnvelope('\n<cueme_prompt>\nHello\n  world\n</cueme_prompt>\n\n<cueme_payload>\n{ "type": "choice",\n "options": ["a"] }\n</cueme_payload>\n');
    assert.equal(env.prompt, 'Hello\n  world');
    assert.equal(env.payloadJson, '{"type":"choice","options":["a"]}');
  });

  it('treats a blank or null payload as null and accepts CRLF', () => {
    assert.equal(parseEnvelope('<cueme_prompt>\r\nx\r\n</cueme_prompt>\r\n<cueme_payload>\r\n\r\n</cueme_payload>\r\n').payloadJson, null);
    assert.equal(parseEnvelope('<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_payload>\nnull\n</cueme_payload>').payloadJson, null);
  });

  const bad: Array<[string, string, RegExp]> = [
    ['empty stdin', '', /empty/],
    ['legacy JSON', '{"prompt":"x"}', /legacy JSON/],
    ['no prompt block', '<cueme_payload>\nnull\n</cueme_payload>', /missing/],
    ['blank prompt', '<cueme_prompt>\n   \n</cueme_prompt>', /empty/],
    ['text outside', 'hi\n<cueme_prompt>\nx\n</cueme_prompt>', /line 1: only whitespace/],
    ['inline tag', '<cueme_prompt>x</cueme_prompt>', /alone on their lines/],
    ['unclosed', '<cueme_prompt>\nx\n', /never closed/],
    ['array payload', '<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_payload>\n[1]\n</cueme_payload>', /JSON object or null, not an array/],
    ['bad JSON', '<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_payload>\n{oops\n</cueme_payload>', /not valid JSON/],
    ['second block', '<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_prompt>\ny\n</cueme_prompt>', /second <cueme_prompt>/],
  ];
  for (const [name, input, message] of bad) {
    it(`rejects ${name} with a message saying what`, () => {
      assert.throws(() => parseEnvelope(input), (error: unknown) => error instanceof EnvelopeError && message.test(error.message));
    });
  }

  it('pause envelopes hold a prompt only', () => {
    assert.throws(() => parseEnvelope('<cueme_prompt>\nx\n</cueme_prompt>\n<cueme_payload>\nnull\n</cueme_payload>', { allowPayload: false }), /<cueme_prompt> block only/);
  });
});

describe('agents and timestamps', () => {
  it('makes pronounceable lowercase ids of 8 to 12 letters', () => {
    const ids = new Set(Array.from({ length: 200 }, () => newAgentId()));
    for (const id of ids) assert.match(id, /^[a-z]{8,12}$/);
    assert.ok(ids.size > 190, 'ids are random');
  });

  it('normalises runtimes and detects the terminal', () => {
    assert.equal(normalizeRuntime(' Claude Code '), 'claude_code');
    assert.equal(normalizeRuntime('wind-surf'), 'wind_surf');
    assert.equal(detectTerminal({ SHELL: '/usr/bin/zsh' }), 'zsh');
    assert.equal(detectTerminal({ SHELL: '/opt/nu' }), 'nushell');
    assert.equal(detectTerminal({ ComSpec: 'C:\\Windows\\system32\\cmd.exe' }), 'cmd');
    assert.equal(detectTerminal({}), 'unknown');
  });

  it('parses every writer\'s timestamp format', () => {
    const now = new Date('2026-11-22T07:18:17.632Z');
    assert.equal(parseMailboxTime(localIsoWithOffset(now)), now.getTime());
    assert.equal(parseMailboxTime('2026-11-22T07:18:17.632+00:00'), now.getTime());
    const naive = parseMailboxTime('2026-11-22 07:18:17.632123');
    assert.equal(naive, new Date(2026, 10, 22, 7, 18, 17, 632).getTime());
    assert.equal(parseMailboxTime('yesterday'), undefined);
    assert.equal(parseMailboxTime(null), undefined);
  });

  it('renders responses by the public cueme\'s rules', () => {
    const base = { id: 1, cancelled: false, files: [] };
    assert.equal(renderResponse('cue', { ...base, text: 'go' }).kind, 'answered');
    assert.match(renderResponse('cue', { ...base, text: 'go' }).text, /gave these instructions:\n\ngo\n\n.*cue/s);
    assert.match(renderResponse('cue', { ...base, text: '  ' }).text, /^No user input received\. Call pause\(agent_id\)/);
    assert.match(renderResponse('pause', { ...base, text: '' }).text, /^The user resumed the conversation\./);
    assert.match(renderResponse('cue', { ...base, text: 'x', cancelled: true }).text, /^The user did not continue\. Call pause\(agent_id\)/);
    const withFile = renderResponse('cue', { ...base, text: '', files: [{ file: 'files/a.png', absolutePath: '/m/files/a.png', mimeType: 'image/png' }] });
    assert.equal(withFile.kind, 'answered');
    assert.match(withFile.text, /attached files:[\s\S]*- \/m\/files\/a\.png \(image\/png\)/);
  });
});
