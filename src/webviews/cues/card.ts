// One cue card: the agent's question, the controls its payload asks for, and the keyboard rules of
// keys.ts. A card that can no longer be answered (expired, abandoned) shows why and offers only
// Dismiss. Built by main.ts, which keeps cards across updates so drafts and half-filled forms survive.
import '@vscode-elements/elements/dist/vscode-checkbox/index.js';
import '@vscode-elements/elements/dist/vscode-radio/index.js';
import '@vscode-elements/elements/dist/vscode-radio-group/index.js';
import '@vscode-elements/elements/dist/vscode-textarea/index.js';
import '@vscode-elements/elements/dist/vscode-textfield/index.js';
import type { VscodeButton } from '@vscode-elements/elements/dist/vscode-button/vscode-button.js';
import type { VscodeCheckbox } from '@vscode-elements/elements/dist/vscode-checkbox/vscode-checkbox.js';
import type { VscodeRadio } from '@vscode-elements/elements/dist/vscode-radio/vscode-radio.js';
import type { VscodeTextfield } from '@vscode-elements/elements/dist/vscode-textfield/vscode-textfield.js';
import { el } from '../shared/dom.ts';
import { firstMissingField, keyAction, type KeyFocus, type KeyNames } from './keys.ts';
import type { ToHost, UiCue, UiSelection } from '../../contracts/cuesPage.ts';
import { button, icon, kbd, markdown, timeLabel } from './render.ts';
import { choiceClicked, confirmClicked, isEmptySelection, sendSelection } from './selection.ts';

type Post = (message: Exclude<ToHost, { type: 'ready' }>) => void;

/** What a card needs from the page. */
export interface CardContext {
  post: Post;
  now(): number;
  keys: KeyNames;
  /** The sidebar shows an "Open in Editor" button; the editor panel does not. */
  inEditor: boolean;
  /** "claude_code · my-project" for the card's header. */
  agentLine(agentId: string): string;
  draft(requestId: string): string;
  saveDraft(requestId: string, text: string): void;
  /** The human sent or ended this card: focus moves on once it is gone. */
  acted(card: Card): void;
}

export interface Card {
  cue: UiCue;
  root: HTMLElement;
  /** Why it cannot be answered, as it was built (a change rebuilds the card). */
  dead: DeadReason | undefined;
  attachments: Array<{ id: string; name: string }>;
  renderAttachments(): void;
  say(message: string, isError?: boolean): void;
  busy(on: boolean): void;
  /** Moves the keyboard into the card. */
  focus(): void;
  /** When the card leaves the page. */
  dispose(): void;
}

export type DeadReason = 'expired' | 'abandoned';

/**
 * Why nobody would read an answer to this cue any more: expired (the host says when; the page
 * watches the clock) or abandoned (the host saw its waiting process go); undefined while it waits.
 */
export function deadReason(cue: UiCue, now: number): DeadReason | undefined {
  if (cue.state === 'abandoned') return 'abandoned';
  return cue.state === 'expired' || (cue.expiresAtMs !== undefined && now > cue.expiresAtMs) ? 'expired' : undefined;
}

function deadText(cue: UiCue, reason: DeadReason): string {
  if (reason === 'abandoned') {
    const who = cue.waiter ? `the cueme that asked this (pid ${cue.waiter.pid}) ended` : 'the process that asked this ended';
    return `Abandoned: ${who} without an answer (killed, or its terminal closed), so an answer would reach nobody. Dismiss marks it ended.`;
  }
  return 'Expired: its cueme stopped waiting, so an answer would reach nobody. Dismiss marks it ended.';
}

function focusOf(target: HTMLElement): KeyFocus {
  if (target.closest('vscode-textarea')) return 'reply';
  if (target.closest('vscode-textfield')) return 'field';
  if (target.tagName === 'VSCODE-BUTTON' || target.tagName === 'BUTTON') return 'button';
  if (target.closest('vscode-checkbox, vscode-radio, vscode-radio-group')) return 'choice';
  return 'card';
}

export function buildCard(cue: UiCue, ctx: CardContext): Card {
  const dead = deadReason(cue, ctx.now());
  const p = cue.payload;
  const root = el('article', `cue kind-${p.kind}${dead ? ` expired ${dead}` : ''}`);
  root.tabIndex = 0;
  root.dataset.requestId = cue.requestId;
  if (dead) root.dataset.dead = dead;
  root.dataset.renderedAt = String(performance.timeOrigin + performance.now());
  root.setAttribute('aria-label', `Cue from ${cue.agentId || 'an agent'}${dead ? `, ${dead}` : ''}`);

  // What the agent is (its runtime and project) leads; its id, random more often than not, sits below.
  const head = el('header', 'cue-head');
  const meta = ctx.agentLine(cue.agentId);
  const who = el('div', 'who');
  who.append(el('span', meta ? 'meta' : 'agent', meta || cue.agentId || 'an agent'));
  if (meta && cue.agentId) who.append(el('span', 'agent-id', cue.agentId));
  head.append(icon(p.kind === 'pause' ? 'debug-pause' : 'hubot'), who);
  const waiting = dead ? el('span', `waiting ${dead}`, dead) : cue.createdAtMs !== undefined ? timeLabel(cue.createdAtMs, 'waiting', ctx.now(), 'waiting') : el('span', 'waiting', 'waiting');
  waiting.setAttribute('role', 'timer');
  head.append(waiting);
  const openInEditor = () => ctx.post({ type: 'openInEditor', requestId: cue.requestId, agentId: cue.agentId });
  if (!ctx.inEditor) {
    const open = button('', { secondary: true, iconName: 'link-external', title: 'Open in Editor: read the whole question in an editor tab', className: 'open-editor icon-only' });
    open.setAttribute('aria-label', 'Open in Editor');
    open.addEventListener('click', openInEditor);
    head.append(open);
  }
  const prompt = markdown(cue.prompt, 'prompt', (url) => ctx.post({ type: 'openLink', url }));
  // Everything between the header and the buttons: in the sidebar it scrolls in its own box, so
  // the card never grows past the view and its buttons stay in sight.
  const body = el('div', 'cue-body');
  body.append(prompt);
  root.append(head, body);
  // A card taller than the sidebar says so, and offers the editor tab, beside the buttons.
  const more = el('button', 'link more');
  more.type = 'button';
  more.append(icon('link-external'), ' Does not fit: open in an editor tab');
  more.hidden = true;
  more.addEventListener('click', openInEditor);

  const status = el('div', 'status');
  status.setAttribute('role', 'status');
  status.setAttribute('aria-live', 'polite');
  const attachList = el('ul', 'attachments');
  attachList.setAttribute('aria-label', 'Attachments');
  const controls: Array<{ disabled: boolean }> = [];
  /** The control the keyboard starts on when it is not the card itself (a form's first field). */
  let firstControl: HTMLElement | undefined;

  const card: Card = {
    cue,
    root,
    dead,
    attachments: [],
    renderAttachments: () => renderAttachments(card, attachList),
    say: (message, isError = false) => {
      status.textContent = message;
      status.classList.toggle('error', isError);
    },
    busy: (on) => {
      for (const c of controls) c.disabled = on;
      root.classList.toggle('busy', on);
    },
    focus: () => {
      root.scrollIntoView({ block: 'nearest' });
      root.focus();
      // A control drawn just now is not there to focus until its element has rendered.
      const control = firstControl;
      if (control) void rendered(control).then(() => {
        if (document.activeElement === root) control.focus();
      });
    },
    dispose: () => undefined,
  };
  if (!ctx.inEditor) {
    const observer = new ResizeObserver(() => {
      const clipped = body.scrollHeight > body.clientHeight + 2;
      body.classList.toggle('clipped', clipped);
      more.hidden = !clipped;
    });
    observer.observe(body);
    observer.observe(prompt);
    card.dispose = () => observer.disconnect();
  }

  const end = () => {
    card.busy(true);
    card.say(dead ? 'Dismissing…' : 'Ending…');
    ctx.acted(card);
    ctx.post({ type: 'cancel', requestId: cue.requestId });
  };
  const endButton = button(dead ? 'Dismiss' : 'End', {
    secondary: true,
    iconName: 'debug-stop',
    className: 'end',
    title: dead ? 'Mark this cue ended' : 'End this cue without an answer: the agent is told to pause',
    key: ctx.keys.end,
    ariaKeys: ctx.keys.endAria,
  });
  endButton.addEventListener('click', end);
  controls.push(endButton);

  if (dead) {
    body.append(el('p', 'warning', deadText(cue, dead)));
    const actions = el('div', 'actions');
    actions.append(endButton);
    root.append(...(ctx.inEditor ? [] : [more]), status, actions);
    root.addEventListener('keydown', (event: KeyboardEvent) => {
      if ((event.ctrlKey || event.metaKey) && event.key === 'Backspace') {
        event.preventDefault();
        end();
      } else if (/^[1-9]$/.test(event.key) || event.key === 'Enter') {
        if (focusOf(event.target as HTMLElement) === 'button') return;
        event.preventDefault();
        card.say(`This cue is ${dead}: it cannot be answered any more. ${ctx.keys.end} dismisses it.`, true);
      }
    });
    return card;
  }

  const reply = document.createElement('vscode-textarea');
  reply.className = 'reply-box';
  reply.rows = 2;
  reply.resize = 'vertical';
  reply.label = `Reply to ${cue.agentId}`;
  reply.setAttribute('aria-label', `Reply to ${cue.agentId}`);
  reply.placeholder = p.kind === 'pause' ? 'A note with Continue… (Enter continues)' : 'Reply… (Enter sends, Shift+Enter for a new line, paste an image)';
  reply.value = ctx.draft(cue.requestId);
  controls.push(reply);

  const sendNow = (selection: UiSelection) => {
    const why = deadReason(card.cue, ctx.now());
    if (why) return card.say(deadText(card.cue, why), true);
    if (isEmptySelection(selection, card.attachments.length)) {
      const hint =
        p.kind === 'choice' ? 'press a number to pick an option, or type a reply' : p.kind === 'confirm' ? `${ctx.keys.confirm} answers “${p.confirmLabel}”, or type a reply` : 'type a reply';
      return card.say(`Nothing to send: ${hint}. End stops the agent instead.`, true);
    }
    card.busy(true);
    card.say('Sending…');
    ctx.acted(card);
    ctx.post({ type: 'answer', requestId: cue.requestId, selection, attachments: card.attachments.map((a) => a.id) });
  };

  const payloadBox = el('div', 'payload');
  let collect: () => UiSelection = () => sendSelection(p, { replyText: reply.value });
  let select: (index: number) => void = () => undefined;
  let confirm: (() => void) | undefined;
  let formValues: (() => Map<string, string[]>) | undefined;
  let focusField: ((label: string) => void) | undefined;

  switch (p.kind) {
    case 'choice': {
      const group = el('div', p.multiple ? 'options multiple' : 'options');
      group.setAttribute('role', 'group');
      group.setAttribute('aria-label', p.multiple ? 'Options (pick any)' : 'Options');
      if (p.multiple) {
        const boxes: VscodeCheckbox[] = p.options.map((label, i) => {
          const box = document.createElement('vscode-checkbox');
          if (i < 9) {
            box.append(kbd(String(i + 1)));
            box.setAttribute('aria-keyshortcuts', String(i + 1));
          }
          box.append(label);
          box.dataset.key = String(i + 1);
          controls.push(box);
          group.append(box);
          return box;
        });
        select = (index) => {
          const box = boxes[index];
          if (box) box.checked = !box.checked;
        };
        collect = () => sendSelection(p, { replyText: reply.value, checked: boxes.flatMap((b, i) => (b.checked ? [p.options[i]!] : [])) });
      } else {
        let selected: number | undefined;
        const options = p.options.map((label, i) => {
          const b = button(label, { secondary: true, className: 'option', ...(i < 9 ? { key: String(i + 1) } : {}) });
          // The key first, as a list reads: "1 Staging".
          const key = b.querySelector('kbd');
          if (key) b.prepend(key);
          b.setAttribute('aria-pressed', 'false');
          b.addEventListener('click', () => sendNow(choiceClicked(label, reply.value)));
          controls.push(b);
          group.append(b);
          return b;
        });
        select = (index) => {
          selected = index;
          options.forEach((b, i) => {
            b.setAttribute('aria-pressed', String(i === index));
            b.classList.toggle('selected', i === index);
            b.secondary = i !== index;
          });
          card.say(`“${p.options[index]}” is selected: ${ctx.keys.send} sends it.`);
        };
        collect = () => (selected !== undefined ? choiceClicked(p.options[selected]!, reply.value) : sendSelection(p, { replyText: reply.value }));
      }
      payloadBox.append(group);
      break;
    }
    case 'confirm':
    case 'pause': {
      if (p.text.trim() && p.text.trim() !== cue.prompt.trim()) payloadBox.append(markdown(p.text, 'confirm-text', (url) => ctx.post({ type: 'openLink', url })));
      const row = el('div', 'confirm-row');
      const pause = p.kind === 'pause';
      const yes = button(p.confirmLabel, {
        iconName: pause ? 'debug-continue' : 'check',
        className: 'confirm',
        key: pause ? ctx.keys.send : ctx.keys.confirm,
        ...(pause ? {} : { ariaKeys: ctx.keys.confirmAria }),
      });
      confirm = () => sendNow(confirmClicked(reply.value));
      yes.addEventListener('click', confirm);
      row.append(yes);
      controls.push(yes);
      if (p.kind === 'confirm') {
        // The cancel label is this card's End: the agent is told the human did not continue.
        const no = button(p.cancelLabel, { secondary: true, className: 'decline', key: ctx.keys.end, ariaKeys: ctx.keys.endAria, title: 'Ends the cue: the agent is told you did not continue' });
        no.addEventListener('click', end);
        row.append(no);
        controls.push(no);
      }
      payloadBox.append(row);
      break;
    }
    case 'form': {
      const form = el('div', 'form');
      const readers: Array<() => [string, string[]]> = [];
      const focusers = new Map<string, () => void>();
      p.fields.forEach((field, i) => {
        const row = el('div', 'field');
        const id = `f-${cue.requestId}-${i}`;
        const label = el('label', 'field-label', field.label);
        label.htmlFor = id;
        label.id = `${id}-label`;
        row.append(label);
        if (field.options.length === 0) {
          const input = document.createElement('vscode-textfield') as VscodeTextfield;
          input.id = id;
          input.label = field.label;
          input.setAttribute('aria-label', field.label);
          controls.push(input);
          readers.push(() => [field.label, [input.value]]);
          focusers.set(field.label, () => input.focus());
          row.append(input);
        } else {
          // Checkboxes for a multi-select field, radios for a single one.
          const group = field.multiple ? el('div', 'field-options') : document.createElement('vscode-radio-group');
          if (field.multiple) group.setAttribute('role', 'group');
          group.setAttribute('aria-labelledby', label.id);
          const inputs = field.options.map((option) => {
            const input: VscodeCheckbox | VscodeRadio = field.multiple ? document.createElement('vscode-checkbox') : Object.assign(document.createElement('vscode-radio'), { name: id });
            input.value = option;
            input.append(option);
            controls.push(input);
            group.append(input);
            return input;
          });
          readers.push(() => [field.label, inputs.filter((b) => b.checked).map((b) => b.value)]);
          focusers.set(field.label, () => inputs[0]?.focus());
          row.append(group);
        }
        form.append(row);
      });
      firstControl = form.querySelector<HTMLElement>('vscode-textfield, vscode-radio, vscode-checkbox') ?? undefined;
      formValues = () => new Map(readers.map((r) => r()));
      focusField = (label) => focusers.get(label)?.();
      collect = () => sendSelection(p, { replyText: reply.value, fields: formValues!() });
      payloadBox.append(form);
      break;
    }
    case 'invalid':
      payloadBox.append(el('p', 'warning', `The agent's payload could not be used (${p.warning}); answer in words.`));
      break;
    case 'none':
      break;
  }
  body.append(payloadBox, reply, attachList);

  reply.addEventListener('input', () => ctx.saveDraft(cue.requestId, reply.value));
  reply.addEventListener('paste', (event: ClipboardEvent) => {
    const items = [...(event.clipboardData?.items ?? [])].filter((item) => item.kind === 'file' && item.type.startsWith('image/'));
    if (items.length === 0) return;
    event.preventDefault();
    for (const item of items) {
      const file = item.getAsFile();
      if (!file) continue;
      const reader = new FileReader();
      reader.onload = () => {
        const url = String(reader.result);
        ctx.post({ type: 'pasteImage', requestId: cue.requestId, mime: file.type, dataBase64: url.slice(url.indexOf(',') + 1) });
      };
      reader.readAsDataURL(file);
    }
  });

  const actions = el('div', 'actions');
  const attach = button('', { secondary: true, iconName: 'attach', title: 'Attach files', className: 'attach icon-only' });
  attach.setAttribute('aria-label', 'Attach files');
  attach.addEventListener('click', () => ctx.post({ type: 'pickFiles', requestId: cue.requestId }));
  controls.push(attach);
  actions.append(attach);
  const send = () => sendNow(collect());
  // A pause's Continue is its Send (Enter); every other card has one, always in view.
  let sendButton: VscodeButton | undefined;
  if (p.kind !== 'pause') {
    sendButton = button('Send', { iconName: 'send', secondary: p.kind === 'confirm', className: 'send', key: ctx.keys.send });
    sendButton.addEventListener('click', send);
    controls.push(sendButton);
    actions.append(sendButton);
  }
  // A confirm's cancel label already ends it (with the same key): no second button for it.
  if (p.kind !== 'confirm') actions.append(endButton);
  // The controls last: the row sticks to the bottom of the view while a long card scrolls.
  const help = keyHelp(cue, ctx.keys);
  if (help) body.append(el('p', 'key-help', help));
  root.append(...(ctx.inEditor ? [] : [more]), status, actions);

  root.addEventListener('keydown', (event: KeyboardEvent) => {
    const target = event.target as HTMLElement;
    if (event.key === 'Escape') {
      event.preventDefault();
      reply.focus();
      return;
    }
    const action = keyAction(p, { key: event.key, ctrl: event.ctrlKey, meta: event.metaKey, shift: event.shiftKey, alt: event.altKey, composing: event.isComposing }, focusOf(target), ctx.keys);
    if (action.kind === 'none') {
      // Typing on the card itself starts a reply: the character goes into the reply box.
      if (focusOf(target) === 'card' && startsReply(event)) reply.focus();
      return;
    }
    event.preventDefault();
    event.stopPropagation();
    switch (action.kind) {
      case 'select':
        return select(action.index);
      case 'send':
        return send();
      case 'confirm':
        return confirm?.();
      case 'end':
        return end();
      case 'hint':
        return card.say(action.text, true);
      case 'sendIfComplete': {
        const missing = formValues ? firstMissingField(p, formValues()) : undefined;
        if (missing === undefined) return send();
        focusField?.(missing);
        return card.say(`Fill in “${missing}” first, or press ${ctx.keys.confirm} to send the form as it is.`, true);
      }
    }
  });
  return card;
}

/** Resolves once a custom element has drawn itself (at once for any other element). */
function rendered(element: HTMLElement): Promise<unknown> {
  return (element as HTMLElement & { updateComplete?: Promise<unknown> }).updateComplete ?? Promise.resolve();
}

/** A key that types a character (not a space, which scrolls), with no modifier held. */
function startsReply(event: KeyboardEvent): boolean {
  return event.key.length === 1 && event.key !== ' ' && !event.ctrlKey && !event.metaKey && !event.altKey && !event.isComposing;
}

/** What the buttons' key hints cannot say by themselves (that numbers select, when Enter sends a form). */
function keyHelp(cue: UiCue, keys: KeyNames): string | undefined {
  switch (cue.payload.kind) {
    case 'choice':
      return cue.payload.multiple ? `Number keys tick options, ${keys.send} sends.` : `Number keys select, ${keys.send} sends; a click answers at once.`;
    case 'form':
      return `${keys.send} sends once every field is filled; ${keys.confirm} sends the form as it is.`;
    default:
      return undefined;
  }
}

function renderAttachments(card: Card, list: HTMLElement): void {
  list.replaceChildren(
    ...card.attachments.map((file) => {
      const li = el('li', 'attachment');
      li.append(icon('file'), el('span', 'name', file.name));
      const remove = el('button', 'remove');
      remove.type = 'button';
      remove.title = `Remove ${file.name}`;
      remove.setAttribute('aria-label', `Remove ${file.name}`);
      remove.append(icon('close'));
      remove.addEventListener('click', () => {
        card.attachments = card.attachments.filter((a) => a.id !== file.id);
        renderAttachments(card, list);
      });
      li.append(remove);
      return li;
    }),
  );
}
