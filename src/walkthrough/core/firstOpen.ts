// Opening the walkthrough by itself on the demo's first start. Pure (no `vscode`): the editor
// layer passes in how to open it, where the Welcome tab stands and how to wait for tabs to change.
//
// Why asked more than once: just after start-up the workbench may not know extensions'
// walkthroughs yet (on a busy machine it was seen registering Belay's more than 8 s after Belay
// started), and asked for one it does not know, it shows its own first walkthrough instead, and
// stays there once it learns Belay's. No API tells the two pages apart (the extension API's tab
// label is "Welcome" for both) or says when the registration is done. Asking again while the
// Welcome tab stands untouched is harmless once Belay's shows (the workbench finds the page
// already open and leaves it as it is) and replaces the workbench's own otherwise.

/** Where the Welcome tab stands. */
export type WelcomeState =
  /** Open and the active tab of the active group. */
  | 'active'
  /** Open, but another tab is active: the person moved on. */
  | 'behind'
  /** Not open. */
  | 'none';

/** What the opening loop is given. */
export interface FirstOpenDeps {
  /** Asks the workbench to show the walkthrough. */
  open(): Promise<void>;
  /** Where the Welcome tab stands now. */
  welcome(): WelcomeState;
  /** Resolves when the tabs change or after `ms`, whichever is first. */
  settle(ms: number): Promise<void>;
  /** Milliseconds since some fixed moment. */
  now(): number;
}

export type FirstOpenOutcome =
  /** Asked until `withinMs` with the Welcome tab untouched. */
  | { kind: 'asked'; attempts: number }
  /** The person closed the Welcome tab, or went to another one: not asked again. */
  | { kind: 'left'; attempts: number; how: 'closed' | 'moved-on' }
  /** The workbench never showed a Welcome tab. */
  | { kind: 'no-tab'; attempts: number };

/** The Welcome tab among editor tabs' labels: "Welcome" or "Walkthrough: …" (the workbench's words). */
export function isWelcomeLabel(label: string): boolean {
  return /^(walkthrough\b|welcome$)/i.test(label.trim());
}

/**
 * Opens the walkthrough, then asks again every `retryMs` while its Welcome tab stays the active
 * tab, until `withinMs`; stops at once when the person closes it or turns to another tab.
 */
export async function openWhileUntouched(deps: FirstOpenDeps, times: { retryMs: number; withinMs: number }): Promise<FirstOpenOutcome> {
  const start = deps.now();
  let attempts = 0;
  let seen = false;
  for (;;) {
    await deps.open();
    attempts++;
    const asked = deps.now();
    for (;;) {
      const state = deps.welcome();
      if (state !== 'none') seen = true;
      if (seen && state !== 'active') return { kind: 'left', attempts, how: state === 'none' ? 'closed' : 'moved-on' };
      const now = deps.now();
      if (now - start >= times.withinMs) return seen ? { kind: 'asked', attempts } : { kind: 'no-tab', attempts };
      if (now - asked >= times.retryMs) break;
      await deps.settle(Math.max(1, Math.min(asked + times.retryMs, start + times.withinMs) - now));
    }
  }
}
