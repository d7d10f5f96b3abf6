package svc

// SvcClient: one method per API operation (CONTRACT §5), over REST, TCP or WSS. Each method has
// a ...Context form taking a context.Context, and a short form using context.Background(), as in
// App Mesh 3.0's Go SDK. Bearer-only (spec "Client token contract" rule 5): SetToken/ClearToken
// keep the token in memory; nothing refreshes it.

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sync"
)

const (
	headerTargetHost = "X-Target-Host"
	headerProcessKey = "X-Svc-Process-Key"
	contentTypeJSON  = "application/json"
)

// SvcClient talks to the daemon over one transport.
type SvcClient struct {
	req       requester
	mu        sync.RWMutex
	token     string
	forwardTo string
	clock     clock
	// observe, when set (by tests), is told every call's method and path.
	observe func(method, path string)
	// filePath is the suffix of the file transfer paths ("/ws" on WSS: App Mesh's data channel).
	fileSuffix string
}

// SvcClientTCP is a client on the TCP transport (TLS, framed msgpack): subscriptions, run-wait.
type SvcClientTCP struct {
	*SvcClient
}

// SvcClientWSS is a client on the WSS transport (sub-protocol svc-ws): subscriptions, run-wait.
type SvcClientWSS struct {
	*SvcClient
}

// RawResponse is the answer of Do: any status, with lower-case header names.
type RawResponse struct {
	StatusCode  int
	Headers     map[string]string
	ContentType string
	Body        []byte
}

func newClient(r requester, o Option) *SvcClient {
	return &SvcClient{req: r, token: o.JwtToken, forwardTo: o.ForwardTo, clock: realClock{}}
}

// NewHTTPClient returns a REST client of the daemon (or agent) at options.SvcUri.
func NewHTTPClient(options Option) (*SvcClient, error) {
	base := options.SvcUri
	if base == "" {
		base = DefaultHTTPURI
	}
	r, err := newRESTRequester(base, options)
	if err != nil {
		return nil, err
	}
	return newClient(r, options), nil
}

// NewTCPClient connects to the TCP API at options.SvcUri (host:port).
func NewTCPClient(options Option) (*SvcClientTCP, error) {
	return NewTCPClientContext(context.Background(), options)
}

// NewTCPClientContext is NewTCPClient with a context bounding the connect.
func NewTCPClientContext(ctx context.Context, options Option) (*SvcClientTCP, error) {
	address := options.SvcUri
	if address == "" {
		address = DefaultTCPURI
	}
	if u, err := url.Parse(address); err == nil && u.Host != "" && (u.Scheme == "tcp" || u.Scheme == "ssl") {
		address = u.Host
	}
	r, err := dialTCP(ctx, address, options)
	if err != nil {
		return nil, err
	}
	return &SvcClientTCP{newClient(r, options)}, nil
}

// NewWSSClient connects to the WSS transport at options.SvcUri (wss://host:port); the bearer
// (options.JwtToken) goes in the upgrade, and the connection stays pinned to its principal.
func NewWSSClient(options Option) (*SvcClientWSS, error) {
	return NewWSSClientContext(context.Background(), options)
}

// NewWSSClientContext is NewWSSClient with a context bounding the connect.
func NewWSSClientContext(ctx context.Context, options Option) (*SvcClientWSS, error) {
	base := options.SvcUri
	if base == "" {
		base = DefaultWSSURI
	}
	r, err := dialWSS(ctx, base, options.JwtToken, options)
	if err != nil {
		return nil, err
	}
	client := newClient(r, options)
	client.fileSuffix = "/ws"
	return &SvcClientWSS{client}, nil
}

// ---- tokens and settings ----

// SetToken replaces the bearer of later requests. REST uses it at once; a TCP or WSS connection
// stays pinned to the principal it authenticated first: reconnect after a token change.
func (c *SvcClient) SetToken(token string) {
	c.mu.Lock()
	c.token = token
	c.mu.Unlock()
}

// GetToken returns the bearer in use ("" when none).
func (c *SvcClient) GetToken() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.token
}

// ClearToken forgets the bearer: later requests carry none.
func (c *SvcClient) ClearToken() { c.SetToken("") }

// SetForwardTo sets the target instance (host[:port]) of later requests ("" for none).
func (c *SvcClient) SetForwardTo(host string) {
	c.mu.Lock()
	c.forwardTo = host
	c.mu.Unlock()
}

// GetForwardTo returns the target instance of requests.
func (c *SvcClient) GetForwardTo() string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.forwardTo
}

// Close closes the transport. On TCP/WSS every pending request fails with
// ErrTransportDisconnected and every subscription callback gets __disconnected__.
func (c *SvcClient) Close() { _ = c.req.close() }

// CloseConnection is Close (the name of App Mesh's TCP and WSS clients).
func (c *SvcClient) CloseConnection() { c.Close() }

// EnableConcurrency is kept for App Mesh compatibility: TCP and WSS clients always run the
// demultiplexer, so every client is safe for concurrent use.
func (c *SvcClient) EnableConcurrency() {}

// Done is closed when a TCP/WSS transport has stopped (nil on REST).
func (c *SvcClient) Done() <-chan struct{} {
	if p, ok := c.req.(*persistentRequester); ok {
		return p.demux.done
	}
	return nil
}

// DemuxStats returns the demultiplexer's counters (false on REST).
func (c *SvcClient) DemuxStats() (DemuxStats, bool) {
	if p, ok := c.req.(*persistentRequester); ok {
		return p.demux.stats(), true
	}
	return DemuxStats{}, false
}

// ---- plumbing ----

func segment(s string) string { return url.PathEscape(s) }

// Do sends one request with the client's bearer and forward target and returns the answer
// whatever its status (only transport failures are errors).
func (c *SvcClient) Do(ctx context.Context, method, path string, query map[string]string, headers map[string]string, body []byte) (*RawResponse, error) {
	r, err := c.exchange(ctx, &call{method: method, path: path, query: query, headers: headers, body: body})
	if err != nil {
		return nil, err
	}
	return &RawResponse{StatusCode: r.status, Headers: r.headers, ContentType: r.contentType, Body: r.body}, nil
}

func (c *SvcClient) exchange(ctx context.Context, cl *call) (*result, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	headers := make(map[string]string, len(cl.headers)+2)
	for k, v := range cl.headers {
		headers[k] = v
	}
	c.mu.RLock()
	token, forward := c.token, c.forwardTo
	c.mu.RUnlock()
	if token != "" {
		headers["Authorization"] = "Bearer " + token
	}
	if forward != "" {
		if _, set := headers[headerTargetHost]; !set {
			headers[headerTargetHost] = forward
		}
	}
	if cl.query == nil {
		cl.query = map[string]string{}
	}
	cl.headers = headers
	observeCall(cl.method, cl.path)
	if c.observe != nil {
		c.observe(cl.method, cl.path)
	}
	return c.req.do(ctx, cl)
}

// send is exchange with a non-2xx answer (other than those in accept) turned into an *APIError.
func (c *SvcClient) send(ctx context.Context, cl *call, accept ...int) (*result, error) {
	r, err := c.exchange(ctx, cl)
	if err != nil {
		return nil, err
	}
	if r.status < 200 || r.status > 299 {
		for _, a := range accept {
			if a == r.status {
				return r, nil
			}
		}
		return nil, newAPIError(cl.method+" "+cl.path, r.status, r.body, r.headers)
	}
	return r, nil
}

// sendJSON sends in (JSON, when not nil) and decodes the answer into out (when not nil).
func (c *SvcClient) sendJSON(ctx context.Context, method, path string, query map[string]string, in any, out any) error {
	cl := &call{method: method, path: path, query: query}
	if in != nil {
		body, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("svc: %s %s: encode body: %w", method, path, err)
		}
		cl.body = body
		cl.headers = map[string]string{"Content-Type": contentTypeJSON}
	}
	r, err := c.send(ctx, cl)
	if err != nil {
		return err
	}
	if out == nil || len(r.body) == 0 {
		return nil
	}
	if err := json.Unmarshal(r.body, out); err != nil {
		return fmt.Errorf("svc: %s %s: the answer is not the expected JSON: %w", method, path, err)
	}
	return nil
}

// callObserver, when set (by tests, before any request), is told every call's method and path.
var callObserver func(method, path string)

func observeCall(method, path string) {
	if callObserver != nil {
		callObserver(method, path)
	}
}
