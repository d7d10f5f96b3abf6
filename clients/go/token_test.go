package svc

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

// Bearer-only: SetToken and ClearToken change the bearer of later REST requests at once; no
// error message carries the token.
func TestTokenSetterAndClearer(t *testing.T) {
	d := shared(t)
	c := d.connect(t, "rest", d.admin())
	ctx := ctxT(t)
	if c.GetToken() != d.admin() {
		t.Fatal("the option's token is not in use")
	}
	c.ClearToken()
	_, err := c.ListAppsContext(ctx)
	if !errors.Is(err, ErrUnauthorized) {
		t.Fatalf("without a token: %v", err)
	}
	var api *APIError
	if !errors.As(err, &api) || !strings.Contains(api.Headers["www-authenticate"], "Bearer") {
		t.Fatalf("the 401 challenge: %+v", api)
	}
	c.SetToken(d.info.Tokens["svc-viewer"])
	self, err := c.GetCurrentPrincipalContext(ctx)
	if err != nil || self["principal_id"] != d.info.Principals["svc-viewer"] {
		t.Fatalf("after SetToken: %v %v", self, err)
	}
	_, err = c.AddAppContext(ctx, sleeper("go-token-forbidden"))
	if !errors.Is(err, ErrForbidden) || strings.Contains(err.Error(), c.GetToken()) {
		t.Fatalf("a 403 (without the token in its text): %v", err)
	}
	c.SetToken("forged." + d.admin())
	if _, err := c.ListAppsContext(ctx); !errors.Is(err, ErrInvalidToken) || strings.Contains(err.Error(), d.admin()) {
		t.Fatalf("a forged token: %v", err)
	}
}

// A TCP or WSS connection authenticates with the bearer of its requests and keeps that
// principal; a request without one is refused.
func TestPersistentTokens(t *testing.T) {
	d := shared(t)
	for _, transport := range []string{"tcp", "wss"} {
		c := d.connect(t, transport, d.info.Tokens["svc-viewer"])
		ctx := ctxT(t)
		self, err := c.GetCurrentPrincipalContext(ctx)
		if err != nil || self["principal_id"] != d.info.Principals["svc-viewer"] {
			t.Fatalf("%s: %v %v", transport, self, err)
		}
		if _, err := c.AddAppContext(ctx, sleeper("go-token-forbidden")); !errors.Is(err, ErrForbidden) {
			t.Fatalf("%s: a viewer registers: %v", transport, err)
		}
		anonymous := d.connect(t, transport, "")
		if transport == "tcp" {
			r, err := anonymous.Do(ctx, http.MethodGet, "/svc/applications", nil, nil, nil)
			if err != nil || r.StatusCode != http.StatusUnauthorized {
				t.Fatalf("tcp without a bearer: %v %v", r, err)
			}
		}
	}
}

// A WSS upgrade with a rejected bearer is the daemon's 401, not a disconnect.
func TestWSSUpgradeWithForgedToken(t *testing.T) {
	d := shared(t)
	o := d.option("forged." + d.admin())
	o.SvcUri = d.info.WSS
	c, err := NewWSSClient(o)
	if c != nil || !errors.Is(err, ErrInvalidToken) || strings.Contains(err.Error(), d.admin()) {
		t.Fatalf("got %v %v", c, err)
	}
}

// WaitForAsyncRun ends with its context: the context's error, unsubscribed, the app kept.
func TestWaitForAsyncRunContext(t *testing.T) {
	d := shared(t)
	c := d.connect(t, "tcp", d.admin())
	run, err := c.RunAppAsyncContext(ctxT(t), Application{Command: strp("sleep 300"), ShellMode: boolp(true)}, 0, 300)
	if err != nil {
		t.Fatal(err)
	}
	defer c.DeleteApp(run.AppName)
	ctx, cancel := context.WithCancel(context.Background())
	waited := make(chan error, 1)
	go func() {
		waited <- awaitSubscribed(run.AppName)
		cancel()
	}()
	code, err := c.WaitForAsyncRun(ctx, run, nil, 0)
	if werr := <-waited; werr != nil {
		t.Fatal(werr)
	}
	if code != nil || !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v %v", code, err)
	}
	if s, _ := c.DemuxStats(); s.RegisteredSubscriptions != 0 {
		t.Fatalf("still subscribed: %+v", s)
	}
	if _, err := c.GetAppContext(ctxT(t), run.AppName); err != nil {
		t.Fatalf("the app must be kept: %v", err)
	}
	if _, err := d.connect(t, "rest", d.admin()).WaitForAsyncRun(ctxT(t), run, nil, 0); !errors.Is(err, ErrNotPersistent) {
		t.Fatalf("over REST: %v", err)
	}
}
