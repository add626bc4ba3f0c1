// The Results view's cells measured in the page (UI tests): whether each part of a trial's cell
// lies inside it, and whether what is cut says so (an ellipsis) and is whole in the tooltip.
// Passed to Playwright's evaluateAll: it runs in the page, so it uses nothing from outside itself
// (here beside the UI tests, compiled with the DOM's types; not a test file of its own).

/** What the page's cells say of their own layout (computed in the page, from the DOM's boxes). */
export interface CellLayout {
  /** "gets-stricter, Attempt 1: .regrade-after '→ 0.00' ends 12px past the cell's right edge". */
  outside: string[];
  /** Parts whose text is cut, whether with an ellipsis, and whether the cell's tooltip holds their words. */
  cut: { text: string; ellipsis: boolean; inTooltip: boolean }[];
  cells: number;
}

/**
 * Every element with text in every drawn trial cell: its box must lie within the cell's (the
 * cell clips what sticks out), and a part whose own text overflows it must end in an ellipsis with
 * its words in the cell's tooltip. Rows are drawn as they scroll into sight: those drawn are checked.
 */
export function cellLayout(cells: Element[]): CellLayout {
  const outside: string[] = [];
  const cut: CellLayout['cut'] = [];
  for (const cell of cells as HTMLElement[]) {
    const box = cell.getBoundingClientRect();
    const where = cell.getAttribute('aria-label')?.split(':')[0] ?? '?';
    for (const part of [...cell.querySelectorAll<HTMLElement>('*')].filter((e) => (e.textContent ?? '').trim() !== '')) {
      const r = part.getBoundingClientRect();
      const name = `.${[...part.classList].join('.') || part.tagName.toLowerCase()} '${part.textContent}'`;
      if (r.left < box.left - 0.5) outside.push(`${where}: ${name} starts ${Math.round(box.left - r.left)}px before the cell's left edge`);
      if (r.right > box.right + 0.5) outside.push(`${where}: ${name} ends ${Math.round(r.right - box.right)}px past the cell's right edge`);
      if (r.top < box.top - 0.5 || r.bottom > box.bottom + 0.5) outside.push(`${where}: ${name} sticks out above or below the cell (${Math.round(r.top - box.top)}..${Math.round(r.bottom - box.top)} in ${Math.round(box.height)}px)`);
      if (part.scrollWidth > part.clientWidth + 0.5 && part.children.length === 0) {
        const text = part.textContent ?? '';
        // The tooltip may set the words apart otherwise ("2 steps · 40.0s"): each of them is there.
        cut.push({ text, ellipsis: getComputedStyle(part).textOverflow === 'ellipsis', inTooltip: text.split(/\s+/).every((word) => cell.title.includes(word)) });
      }
    }
  }
  return { outside, cut, cells: cells.length };
}

