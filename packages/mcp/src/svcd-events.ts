// svcd's events for the MCP server (event-feed.ts), over one WSS connection (@svc/client) per
// principal, authenticated with that principal's bearer: svcd's subscribe rule (app-subscribe on
// the application) decides, as for any client.
import { ApiError, connectWss, SvcClient } from '@svc/client';
import { EventsRefused, type EventConnector } from './event-feed.ts';

export function svcdEvents(options: { baseUrl: string; ca: string | undefined }): EventConnector {
  return async (token) => {
    const transport = await connectWss({
      url: options.baseUrl,
      token,
      ...(options.ca === undefined ? {} : { ca: options.ca }),
    });
    const client = new SvcClient({ transport, token });
    return {
      async watch(app, onEvent) {
        try {
          const info = await client.subscribe(app, ['START', 'REMOVED'], (event) => {
            if (event.event_type !== '__disconnected__') onEvent();
          });
          return info.subscription_id;
        } catch (error) {
          if (error instanceof ApiError && error.status >= 400 && error.status < 500)
            throw new EventsRefused(error.status, error.message);
          throw error;
        }
      },
      async unwatch(id) {
        await client.unsubscribe(id);
      },
      setToken(next) {
        client.setToken(next);
      },
      closed: transport.closed,
      close: () => client.close(),
    };
  };
}
