package svc

// Transports carry one call (method, path, query, headers, body) and return its result; the
// client builds the call the same way for all three (CONTRACT §4: one operation table).
//
//	restRequester        HTTPS, one request per call (context cancels it)
//	persistentRequester  TCP (TLS, framed msgpack) and WSS (sub-protocol svc-ws): one connection,
//	                     one reader goroutine feeding the demultiplexer, no client-side wait cap

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
)

type call struct {
	method  string
	path    string
	query   map[string]string
	headers map[string]string
	body    []byte
	// stream, when set, is the body of a REST request streamed from a reader (file upload).
	stream io.Reader
}

type result struct {
	status int
	// headers with lower-case names
	headers     map[string]string
	contentType string
	body        []byte
}

func (r *result) header(name string) (string, bool) {
	v, ok := r.headers[strings.ToLower(name)]
	return v, ok
}

type requester interface {
	do(ctx context.Context, c *call) (*result, error)
	close() error
}

// newUUID is a random RFC 4122 version 4 uuid.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

func lowerHeaders(in map[string]string) map[string]string {
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[strings.ToLower(k)] = v
	}
	return out
}

// tlsConfig builds the client TLS configuration from the options: the CA to trust (a PEM file or
// a directory of them; the system store when none is given), an optional client certificate.
func tlsConfig(o Option) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if o.InsecureSkipVerify || (o.SslTrustedCA != nil && *o.SslTrustedCA == "") {
		cfg.InsecureSkipVerify = true // #nosec G402 -- explicit opt-in (tests only)
	} else {
		ca := DefaultCAFile
		if o.SslTrustedCA != nil {
			ca = *o.SslTrustedCA
		} else if _, err := os.Stat(ca); err != nil {
			ca = "" // no local install: the system store
		}
		if ca != "" {
			pool, err := loadCA(ca)
			if err != nil {
				return nil, err
			}
			cfg.RootCAs = pool
		}
	}
	if o.SslClientCertificateFile != "" {
		pair, err := tls.LoadX509KeyPair(o.SslClientCertificateFile, o.SslClientCertificateKeyFile)
		if err != nil {
			return nil, fmt.Errorf("svc: client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

func loadCA(path string) (*x509.CertPool, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("svc: CA %s: %w", path, err)
	}
	files := []string{path}
	if info.IsDir() {
		entries, err := os.ReadDir(path)
		if err != nil {
			return nil, fmt.Errorf("svc: CA directory %s: %w", path, err)
		}
		files = files[:0]
		for _, e := range entries {
			if !e.IsDir() && (strings.HasSuffix(e.Name(), ".pem") || strings.HasSuffix(e.Name(), ".crt")) {
				files = append(files, path+string(os.PathSeparator)+e.Name())
			}
		}
	}
	pool := x509.NewCertPool()
	for _, f := range files {
		pem, err := os.ReadFile(f)
		if err != nil {
			return nil, fmt.Errorf("svc: CA %s: %w", f, err)
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("svc: CA %s holds no PEM certificate", f)
		}
	}
	return pool, nil
}

// messageConn is one persistent connection: it writes whole encoded Requests and runs the reader
// that feeds the demultiplexer until the connection fails.
type messageConn interface {
	// write sends one encoded Request (framed by TCP, one binary message on WSS).
	write(msg []byte) error
	// closeConn closes the socket (the reader then stops).
	closeConn() error
}

// persistentRequester is the TCP and WSS transport around a messageConn.
type persistentRequester struct {
	conn  messageConn
	demux *demuxer
	// maxSend bounds an encoded message (the daemon takes up to 256 MiB once authenticated).
	maxSend int
	// authenticated: an answer to a request with credentials came back (the daemon then takes
	// large messages; before that, at most 1 MiB).
	authenticated atomic.Bool
	warmup        sync.Mutex
	closeOnce     sync.Once
}

func newPersistentRequester(conn messageConn, d *demuxer, authenticatedAtStart bool) *persistentRequester {
	p := &persistentRequester{conn: conn, demux: d, maxSend: DaemonMaxBodyBytes}
	p.authenticated.Store(authenticatedAtStart)
	return p
}

// fail stops the demultiplexer and closes the socket (reader errors, undecodable input).
func (p *persistentRequester) fail(cause error) {
	p.demux.stop(cause)
	p.closeOnce.Do(func() { _ = p.conn.closeConn() })
}

func (p *persistentRequester) close() error {
	p.fail(ErrTransportDisconnected)
	return nil
}

func (p *persistentRequester) do(ctx context.Context, c *call) (*result, error) {
	if c.stream != nil {
		body, err := io.ReadAll(io.LimitReader(c.stream, int64(p.maxSend)+1))
		if err != nil {
			return nil, err
		}
		c = &call{method: c.method, path: c.path, query: c.query, headers: c.headers, body: body}
	}
	req := &Request{
		UUID:       newUUID(),
		RequestUri: c.path,
		HttpMethod: c.method,
		Headers:    c.headers,
		Query:      c.query,
		Body:       c.body,
	}
	if req.Headers == nil {
		req.Headers = map[string]string{}
	}
	if req.Query == nil {
		req.Query = map[string]string{}
	}
	if err := checkRequestLimits(req); err != nil {
		return nil, err // the daemon would drop the connection for it: refuse it here
	}
	msg := EncodeRequest(req)
	if len(msg) > p.maxSend {
		return nil, fmt.Errorf("svc: a request of %d bytes is above the daemon's bound of %d", len(msg), p.maxSend)
	}
	_, hasBearer := req.Headers["Authorization"]
	if len(msg) > UnauthenticatedMaxBodyBytes && hasBearer && !p.authenticated.Load() {
		if err := p.authenticate(ctx, req.Headers); err != nil {
			return nil, err
		}
	}
	resp, err := p.exchange(ctx, req.UUID, msg)
	if err != nil {
		return nil, err
	}
	if hasBearer && resp.HttpStatus != http.StatusUnauthorized {
		p.authenticated.Store(true)
	}
	return &result{status: resp.HttpStatus, headers: lowerHeaders(resp.Headers), contentType: resp.BodyMsgType, body: resp.Body}, nil
}

// authenticate sends a small request with the bearer first, so that the daemon takes the large
// one that follows (it takes at most 1 MiB before a connection has authenticated).
func (p *persistentRequester) authenticate(ctx context.Context, headers map[string]string) error {
	p.warmup.Lock()
	defer p.warmup.Unlock()
	if p.authenticated.Load() {
		return nil
	}
	small := map[string]string{"Authorization": headers["Authorization"]}
	if t, ok := headers[headerTargetHost]; ok {
		small[headerTargetHost] = t
	}
	req := &Request{UUID: newUUID(), RequestUri: "/svc/principal/self", HttpMethod: http.MethodGet, Headers: small, Query: map[string]string{}}
	resp, err := p.exchange(ctx, req.UUID, EncodeRequest(req))
	if err != nil {
		return err
	}
	if resp.HttpStatus == http.StatusUnauthorized {
		return newAPIError("GET /svc/principal/self", resp.HttpStatus, resp.Body, resp.Headers)
	}
	p.authenticated.Store(true)
	return nil
}

// exchange registers the uuid, writes the message and waits for its answer, the context, or
// the end of the transport. No timer of its own (demultiplexer contract rule 3).
func (p *persistentRequester) exchange(ctx context.Context, uuid string, msg []byte) (*Response, error) {
	ch, err := p.demux.expect(uuid) // before the bytes are written (rule 2, S7)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		p.demux.cancel(uuid)
		return nil, err
	}
	if err := p.conn.write(msg); err != nil {
		p.demux.cancel(uuid)
		p.fail(err)
		if stopped := p.demux.err(); stopped != nil {
			return nil, stopped
		}
		return nil, fmt.Errorf("%w: %v", ErrTransportDisconnected, err)
	}
	select {
	case resp, ok := <-ch:
		if !ok {
			// Disconnected: the transport is closed; later requests fail the same way at once.
			p.fail(ErrTransportDisconnected)
			return nil, p.demux.err()
		}
		return resp, nil
	case <-ctx.Done():
		p.demux.cancel(uuid)
		return nil, ctx.Err()
	}
}

// checkRequestLimits refuses a Request the daemon would not decode (spec/wire-vectors.json
// limit_exceeded): request_uri over 8 KiB, over 256 headers or query entries, an entry over 64 KiB.
func checkRequestLimits(r *Request) error {
	if len(r.RequestUri) > maxRequestURIBytes {
		return wireErr("limit_exceeded", "request_uri", fmt.Sprintf("a path of %d bytes is over 8 KiB", len(r.RequestUri)))
	}
	for field, m := range map[string]map[string]string{"headers": r.Headers, "query": r.Query} {
		if len(m) > maxMapEntries {
			return wireErr("limit_exceeded", field, fmt.Sprintf("over %d entries", maxMapEntries))
		}
		for k, v := range m {
			if len(k) > maxEntryBytes || len(v) > maxEntryBytes {
				return wireErr("limit_exceeded", field, "an entry is over 64 KiB")
			}
		}
	}
	return nil
}
