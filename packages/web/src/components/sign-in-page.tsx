import { signIn } from '../auth/sign-in.ts';
import { useState } from 'preact/hooks';

export function SignInPage({ reason }: { reason?: string | undefined }) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>(undefined);
  return (
    <main class="center sign-in">
      <h1>svc</h1>
      <p>Sign in to see and control the applications svc runs.</p>
      {reason !== undefined && reason !== '' && (
        <p class="note error" role="alert">
          {reason}
        </p>
      )}
      {error !== undefined && (
        <p class="note error" role="alert">
          {error}
        </p>
      )}
      <button
        type="button"
        class="primary"
        disabled={busy}
        onClick={() => {
          setBusy(true);
          signIn().catch((cause: unknown) => {
            setBusy(false);
            setError(cause instanceof Error ? cause.message : String(cause));
          });
        }}
      >
        Sign in
      </button>
    </main>
  );
}
