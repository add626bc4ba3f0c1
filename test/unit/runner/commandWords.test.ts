// A command string in an environment with no shell: the words it names, nothing expanded.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { commandArgv, commandWords } from '../../../src/runner/core/backends/backend.ts';

describe('command strings without a shell', () => {
  it('splits at blanks and keeps quoted words whole, quotes removed', () => {
    assert.deepEqual(commandWords('ls -la  /app'), ['ls', '-la', '/app']);
    assert.deepEqual(commandWords(`'/opt/node/bin/node' "/a b/agent.mjs" --x='y z'`), ['/opt/node/bin/node', '/a b/agent.mjs', '--x=y z']);
    assert.deepEqual(commandWords("echo '' \"\" x"), ['echo', '', '', 'x']);
    assert.deepEqual(commandWords('\t\n  '), []);
  });

  it('expands, redirects and pipes nothing: what a shell would read is a plain word', () => {
    assert.deepEqual(commandWords('cat $HOME/x > out | wc; rm -rf /'), ['cat', '$HOME/x', '>', 'out', '|', 'wc;', 'rm', '-rf', '/']);
    assert.deepEqual(commandWords('echo `id` $(id)'), ['echo', '`id`', '$(id)']);
  });

  it('takes backslash escapes outside quotes and the shell\'s few inside double quotes, none inside single quotes', () => {
    assert.deepEqual(commandWords('a\\ b c\\\\d'), ['a b', 'c\\d']);
    assert.deepEqual(commandWords('"a\\"b\\n"'), ['a"b\\n']);
    assert.deepEqual(commandWords("'a\\'"), ['a\\']);
  });

  it('keeps the rest of an unterminated quote as one word', () => {
    assert.deepEqual(commandWords('echo "never closed here'), ['echo', 'never closed here']);
  });

  it("runs a command string with the environment's shell, or its words where there is none", () => {
    assert.deepEqual(commandArgv({ shell: '/bin/sh' }, 'echo hi'), ['/bin/sh', '-c', 'echo hi']);
    assert.deepEqual(commandArgv({ shell: null }, "touch '/app/a b'"), ['touch', '/app/a b']);
    assert.deepEqual(commandArgv({ shell: null }, '   '), ['true']);
  });
});
