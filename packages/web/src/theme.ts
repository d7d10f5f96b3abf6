// Light and dark themes: the system's choice (prefers-color-scheme) unless the person picked one
// with the toggle; that choice (not a secret) is kept in localStorage.
import { signal } from '@preact/signals';

export type Theme = 'light' | 'dark' | 'system';
const KEY = 'svc-web.theme';

export const theme = signal<Theme>('system');

export function applyTheme(next?: Theme): void {
  if (next !== undefined) {
    theme.value = next;
    if (next === 'system') localStorage.removeItem(KEY);
    else localStorage.setItem(KEY, next);
  } else {
    const stored = localStorage.getItem(KEY);
    theme.value = stored === 'light' || stored === 'dark' ? stored : 'system';
  }
  if (theme.value === 'system') delete document.documentElement.dataset['theme'];
  else document.documentElement.dataset['theme'] = theme.value;
}

/** The theme the page shows now. */
export function shownTheme(): 'light' | 'dark' {
  if (theme.value !== 'system') return theme.value;
  return window.matchMedia('(prefers-color-scheme: dark)').matches ? 'dark' : 'light';
}
