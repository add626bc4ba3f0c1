// The button labels of a confirm or pause payload, as every responder shows them. Kept apart from
// payload.ts (the zod schemas) so the editor's model, answers and notifications can name buttons
// without loading zod at activation.

/** The fields of a confirm payload (payload.ts) that name its buttons. */
export interface ConfirmButtons {
  confirm_label?: string | undefined;
  cancel_label?: string | undefined;
  variant?: string | undefined;
}

export function confirmLabel(payload: ConfirmButtons): string {
  return payload.confirm_label?.trim() || (payload.variant === 'pause' ? 'Continue' : 'Confirm');
}

export function cancelLabel(payload: ConfirmButtons): string {
  return payload.cancel_label?.trim() || 'Cancel';
}
