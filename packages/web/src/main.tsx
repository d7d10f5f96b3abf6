// Entry: theme first (no flash), then the session (completes or starts sign-in), then the shell.
import { render } from 'preact';
import { App } from './app.tsx';
import { startSession } from './auth/sign-in.ts';
import { applyTheme } from './theme.ts';
import './styles.css';

applyTheme();
const root = document.getElementById('app');
if (root !== null) {
  render(<App />, root);
  void startSession();
}
