// The banner shown while the live connection is down; it retries on its own (connection.ts).
import { connectionState, reconnectNow } from '../connection.ts';

export function ConnectionBanner() {
  const state = connectionState.value;
  return (
    <div class="banner-region" role="status" aria-live="assertive">
      {state === 'offline' && (
        <div class="banner" data-testid="connection-banner">
          <span>Connection to svc lost — reconnecting…</span>
          <button type="button" onClick={reconnectNow}>
            Retry now
          </button>
        </div>
      )}
    </div>
  );
}
