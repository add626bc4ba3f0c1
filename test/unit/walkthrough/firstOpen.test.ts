// The walkthrough's opening on the demo's first start, against a simulated workbench on a virtual
// clock that behaves as the real one was seen to: it learns extensions' walkthroughs only some
// seconds after start, shows its own first walkthrough when asked for one it does not know and
// stays there, and leaves an open page as it is when asked for the walkthrough it already shows.
// Also a person who closes the Welcome tab or turns to another tab, and a workbench that opens none.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isWelcomeLabel, openWhileUntouched, type FirstOpenDeps, type WelcomeState } from '../../../src/walkthrough/core/firstOpen.ts';

const TIMES = { retryMs: 4000, withinMs: 60_000 };

interface Sim {
  deps: FirstOpenDeps;
  /** What the Welcome tab shows: 'belay', 'own' (the workbench's first walkthrough), or undefined. */
  page(): 'belay' | 'own' | undefined;
  opened: number[];
  /** How many times the page was drawn anew. */
  renders(): number;
}

function workbench(options: { registeredAt: number; tabDelay?: number; person?: { at: number; does: 'close' | 'other-tab' } }): Sim {
  let clock = 0;
  let page: 'belay' | 'own' | undefined;
  let state: WelcomeState = 'none';
  let renders = 0;
  const opened: number[] = [];
  const pending: Array<{ at: number; run: () => void }> = [];
  let personDone = false;
  const advance = (to: number): void => {
    clock = to;
    pending.sort((a, b) => a.at - b.at);
    while (pending.length && pending[0]!.at <= clock) pending.shift()!.run();
    const person = options.person;
    if (person && !personDone && clock >= person.at) {
      personDone = true;
      if (person.does === 'close') {
        page = undefined;
        state = 'none';
      } else if (state === 'active') state = 'behind';
    }
  };
  const deps: FirstOpenDeps = {
    async open() {
      opened.push(clock);
      const known = clock >= options.registeredAt;
      pending.push({
        at: clock + (options.tabDelay ?? 300),
        run: () => {
          // Asked for the page it shows: left as it is. Otherwise drawn anew.
          const next = known ? 'belay' : 'own';
          if (page !== next || state === 'none') renders++;
          page = next;
          state = 'active';
        },
      });
    },
    welcome: () => state,
    async settle(ms) {
      assert.ok(ms > 0, `settle(${ms}) would spin`);
      const events = [...pending.map((p) => p.at), ...(options.person && !personDone ? [Math.max(options.person.at, clock + 1)] : [])];
      advance(Math.min(clock + ms, ...events));
    },
    now: () => clock,
  };
  return { deps, page: () => page, opened, renders: () => renders };
}

describe('opening the walkthrough on the demo’s first start', () => {
  test('a workbench that knows the walkthrough shows it at once; asking again draws nothing anew', async () => {
    const sim = workbench({ registeredAt: 0 });
    const outcome = await openWhileUntouched(sim.deps, TIMES);
    assert.equal(outcome.kind, 'asked');
    assert.equal(sim.page(), 'belay');
    assert.equal(sim.renders(), 1);
  });

  test('a workbench that learns it 20 s late showed its own meanwhile: Belay’s shows in the end', async () => {
    const sim = workbench({ registeredAt: 20_000 });
    const outcome = await openWhileUntouched(sim.deps, TIMES);
    assert.equal(outcome.kind, 'asked');
    assert.equal(sim.page(), 'belay');
    assert.ok(sim.opened.some((at) => at >= 20_000), `asked at ${sim.opened.join(', ')}`);
    // No more often than every retryMs.
    for (let i = 1; i < sim.opened.length; i++) assert.ok(sim.opened[i]! - sim.opened[i - 1]! >= TIMES.retryMs);
  });

  test('a tab that takes longer than a retry to appear is asked for again, not taken for closed', async () => {
    const sim = workbench({ registeredAt: 0, tabDelay: 6000 });
    const outcome = await openWhileUntouched(sim.deps, TIMES);
    assert.equal(outcome.kind, 'asked');
    assert.equal(sim.page(), 'belay');
  });

  test('the person closes the Welcome tab: never opened again', async () => {
    const sim = workbench({ registeredAt: 30_000, person: { at: 5000, does: 'close' } });
    const outcome = await openWhileUntouched(sim.deps, TIMES);
    assert.deepEqual(outcome, { kind: 'left', attempts: 2, how: 'closed' });
    assert.ok(sim.opened.every((at) => at < 5000), `asked at ${sim.opened.join(', ')}`);
    assert.equal(sim.page(), undefined);
  });

  test('the person turns to another tab: the Welcome tab is not brought back before it', async () => {
    const sim = workbench({ registeredAt: 30_000, person: { at: 9000, does: 'other-tab' } });
    const outcome = await openWhileUntouched(sim.deps, TIMES);
    assert.equal(outcome.kind, 'left');
    assert.equal(outcome.kind === 'left' && outcome.how, 'moved-on');
    assert.ok(sim.opened.every((at) => at < 9000), `asked at ${sim.opened.join(', ')}`);
  });

  test('a workbench that opens no tab: stops at the limit and says so', async () => {
    const sim = workbench({ registeredAt: 0, tabDelay: Number.POSITIVE_INFINITY });
    const outcome = await openWhileUntouched(sim.deps, { retryMs: 4000, withinMs: 20_000 });
    assert.equal(outcome.kind, 'no-tab');
    assert.ok(sim.opened.length <= 6, `asked ${sim.opened.length} times in 20 s`);
  });

  test('the Welcome tab is told from other tabs by its label', () => {
    assert.equal(isWelcomeLabel('Welcome'), true);
    assert.equal(isWelcomeLabel('Walkthrough: Setup VS Code Web'), true);
    for (const label of ['welcome.md', 'task.toml', 'Walkthroughs.md', 'README.md']) assert.equal(isWelcomeLabel(label), false, label);
  });
});
