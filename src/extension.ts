import type * as vscode from 'vscode';
console.log('belay');
export function activate(_context: vscode.ExtensionContext): void {}
export function deactivate(): void {}
