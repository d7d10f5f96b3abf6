package svc

// REST transport: HTTPS, one request per call; the context cancels it.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
)

// maxRESTBody bounds an answer read into memory (file downloads stream instead).
const maxRESTBody = ClientMaxBodyBytes

type restRequester struct {
	base   *url.URL
	client *http.Client
}

func newRESTRequester(base string, o Option) (*restRequester, error) {
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return nil, fmt.Errorf("svc: bad REST URL %q (https://host:port)", base)
	}
	cfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	transport := &http.Transport{TLSClientConfig: cfg, Proxy: http.ProxyFromEnvironment, ForceAttemptHTTP2: true}
	return &restRequester{base: u, client: &http.Client{Transport: transport, Timeout: o.HTTPTimeout}}, nil
}

func (r *restRequester) request(ctx context.Context, c *call) (*http.Request, error) {
	// c.path is already escaped (each name segment percent-encoded).
	unescaped, err := url.PathUnescape(c.path)
	if err != nil {
		return nil, fmt.Errorf("svc: bad path %q", c.path)
	}
	u := *r.base
	u.Path = strings.TrimSuffix(r.base.Path, "/") + unescaped
	u.RawPath = strings.TrimSuffix(r.base.EscapedPath(), "/") + c.path
	q := url.Values{}
	for k, v := range c.query {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	var body io.Reader
	if c.stream != nil {
		body = c.stream
	} else if len(c.body) > 0 {
		body = bytes.NewReader(c.body)
	}
	req, err := http.NewRequestWithContext(ctx, c.method, u.String(), body)
	if err != nil {
		return nil, err
	}
	for k, v := range c.headers {
		req.Header.Set(k, v)
	}
	return req, nil
}

func (r *restRequester) send(ctx context.Context, c *call) (*http.Response, error) {
	req, err := r.request(ctx, c)
	if err != nil {
		return nil, err
	}
	return r.client.Do(req)
}

func (r *restRequester) do(ctx context.Context, c *call) (*result, error) {
	resp, err := r.send(ctx, c)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxRESTBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxRESTBody {
		return nil, fmt.Errorf("svc: an answer above %d bytes", maxRESTBody)
	}
	return &result{status: resp.StatusCode, headers: flatHeaders(resp.Header), contentType: resp.Header.Get("Content-Type"), body: body}, nil
}

func flatHeaders(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		if len(v) > 0 {
			out[strings.ToLower(k)] = v[0]
		}
	}
	return out
}

func (r *restRequester) close() error {
	r.client.CloseIdleConnections()
	return nil
}
