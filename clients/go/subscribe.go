package svc

// Event subscriptions (spec "Event subscription"): TCP and WSS only; over REST the daemon
// answers 405 (ErrPersistentConnectionRequired).

import (
	"context"
	"fmt"
	"net/http"
	"strings"
)

func (c *SvcClient) persistent() (*persistentRequester, bool) {
	p, ok := c.req.(*persistentRequester)
	return p, ok
}

// Subscribe subscribes to the events of one application (or all, AppName "" or "*"); callback
// gets them one at a time in arrival order, and one __disconnected__ when the transport stops.
func (c *SvcClient) Subscribe(opt SubscribeOption, callback EventCallback) (*SubscriptionResult, error) {
	return c.SubscribeContext(context.Background(), opt, callback)
}

// SubscribeContext is Subscribe with a context (it bounds the subscribe call only).
func (c *SvcClient) SubscribeContext(ctx context.Context, opt SubscribeOption, callback EventCallback) (*SubscriptionResult, error) {
	path := "/svc/subscribe"
	if opt.AppName != "" && opt.AppName != "*" {
		path = "/svc/app/" + segment(opt.AppName) + "/subscribe"
	}
	var out SubscriptionResult
	err := c.sendJSON(ctx, http.MethodPost, path, map[string]string{"events": strings.Join(opt.Events, ",")}, nil, &out)
	if err != nil {
		return nil, err
	}
	if out.SubscriptionID == "" {
		return nil, fmt.Errorf("svc: the daemon answered no subscription_id")
	}
	if callback != nil {
		if err := c.AttachEventCallback(out.SubscriptionID, callback); err != nil {
			return nil, err
		}
	}
	return &out, nil
}

// AttachEventCallback registers the callback of a subscription made without one (AddApp with
// subscribeEvents, a raw request): events that arrived before are delivered first, in order.
func (c *SvcClient) AttachEventCallback(subscriptionID string, callback EventCallback) error {
	p, ok := c.persistent()
	if !ok {
		return ErrNotPersistent
	}
	return p.demux.register(subscriptionID, callback)
}

// Unsubscribe removes a subscription (DELETE /svc/subscribe). Its callback is detached first,
// so no event reaches it once this call starts; an unknown id is not an error.
func (c *SvcClient) Unsubscribe(subscriptionID string) error {
	return c.UnsubscribeContext(context.Background(), subscriptionID)
}

// UnsubscribeContext is Unsubscribe with a context.
func (c *SvcClient) UnsubscribeContext(ctx context.Context, subscriptionID string) error {
	return c.unsubscribe(ctx, "/svc/subscribe", subscriptionID)
}

// UnsubscribeApp removes a subscription of one application (DELETE /svc/app/{name}/subscribe).
func (c *SvcClient) UnsubscribeApp(appName string, subscriptionID string) error {
	return c.UnsubscribeAppContext(context.Background(), appName, subscriptionID)
}

// UnsubscribeAppContext is UnsubscribeApp with a context.
func (c *SvcClient) UnsubscribeAppContext(ctx context.Context, appName string, subscriptionID string) error {
	return c.unsubscribe(ctx, "/svc/app/"+segment(appName)+"/subscribe", subscriptionID)
}

func (c *SvcClient) unsubscribe(ctx context.Context, path, id string) error {
	if p, ok := c.persistent(); ok {
		p.demux.unregister(id)
	}
	_, err := c.send(ctx, &call{method: http.MethodDelete, path: path, query: map[string]string{"subscription_id": id}}, http.StatusNotFound)
	return err
}
