/** Shared by the extension-host suites: the text of a tree item (label, tooltip), plain or Markdown. */
import type * as vscode from 'vscode';

export function label(item: vscode.TreeItem): string {
  return typeof item.label === 'string' ? item.label : (item.label?.label ?? '');
}

export function tooltipText(t: vscode.TreeItem['tooltip']): string {
  return t === undefined ? '' : typeof t === 'string' ? t : t.value;
}
