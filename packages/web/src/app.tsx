// The shell: header with navigation, the connection banner, and the routed view. Before sign-in it
// shows the sign-in page; the signed-in principal (GET /svc/principal/self) is loaded once signed in.
import { useEffect } from 'preact/hooks';
import { self, can } from './access.ts';
import { api, errorText } from './api.ts';
import { authState } from './auth/sign-in.ts';
import { ConnectionBanner } from './components/connection-banner.tsx';
import { Header } from './components/header.tsx';
import { SignInPage } from './components/sign-in-page.tsx';
import { ViewOutlet } from './components/view-outlet.tsx';
import { signal } from '@preact/signals';
import { prefetchApplications } from './state/list-prefetch.ts';
import { VIEWS } from './views.ts';

const selfError = signal<string | undefined>(undefined);

async function loadSelf(): Promise<void> {
  // The home view's code and its first data load while the principal is read.
  void VIEWS[0]?.load().catch(() => undefined);
  prefetchApplications();
  try {
    const info = await api.getSelf();
    self.value = { ...info, roles: info.roles ?? [], permissions: info.permissions ?? [] };
    selfError.value = undefined;
  } catch (error) {
    selfError.value = errorText(error);
  }
}

export function App() {
  const state = authState.value;
  useEffect(() => {
    if (state.status === 'signed-in' && self.value === undefined) void loadSelf();
    if (state.status !== 'signed-in') self.value = undefined;
  }, [state.status]);

  if (state.status === 'starting' || state.status === 'signing-out')
    return (
      <main class="center" aria-busy="true">
        <p>{state.status === 'starting' ? 'Signing in…' : 'Signing out…'}</p>
      </main>
    );
  if (state.status !== 'signed-in')
    return <SignInPage reason={state.status === 'expired' ? `Your session ended: ${state.reason}` : state.reason} />;
  if (self.value === undefined)
    return (
      <main class="center" aria-busy={selfError.value === undefined}>
        {selfError.value === undefined ? <p>Loading…</p> : <p role="alert">Cannot read who you are: {selfError.value}</p>}
      </main>
    );
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <Header />
      <ConnectionBanner />
      <main id="main" tabIndex={-1}>
        <ViewOutlet can={can} />
      </main>
    </>
  );
}
