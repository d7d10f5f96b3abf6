package svc

// The scripted-server halves of S1, S2, S4, S5 and S7 (spec/conformance/S<n>.json "scripted"):
// a local TLS socket speaking the TCP framing whose every answer the transcript decides.

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// scriptedTLS is a throw-away CA-signed-by-itself certificate for 127.0.0.1.
func scriptedTLS(t *testing.T) (*tls.Config, string) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "scripted"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}}, caFile
}

type scriptedServer struct {
	t        *testing.T
	conn     net.Conn
	requests chan *Request
	mu       sync.Mutex
	every    map[string]any // answer_every_request
	current  *Request
}

func startScripted(t *testing.T) (*scriptedServer, *SvcClient, *fakeClock) {
	return startScriptedWith(t, Option{JwtToken: "test-token"})
}

func startScriptedWith(t *testing.T, o Option) (*scriptedServer, *SvcClient, *fakeClock) {
	cfg, caFile := scriptedTLS(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	accepted := make(chan net.Conn, 1)
	go func() {
		conn, err := ln.Accept()
		if err == nil {
			_ = conn.(*tls.Conn).Handshake() // the client's dial waits for it
			accepted <- conn
		}
	}()
	o.SvcUri, o.SslTrustedCA = ln.Addr().String(), &caFile
	client, err := NewTCPClient(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	clock := &fakeClock{}
	client.clock = clock
	s := &scriptedServer{t: t, conn: <-accepted, requests: make(chan *Request, 1024)}
	t.Cleanup(func() { s.conn.Close() })
	go s.read()
	return s, client.SvcClient, clock
}

func (s *scriptedServer) read() {
	decoder := NewFrameDecoder(DaemonMaxBodyBytes)
	buf := make([]byte, 64<<10)
	for {
		n, err := s.conn.Read(buf)
		bodies, _ := decoder.Push(buf[:n])
		for _, b := range bodies {
			req, derr := DecodeRequest(b)
			if derr != nil {
				continue
			}
			s.mu.Lock()
			every := s.every
			s.mu.Unlock()
			if every != nil {
				s.write(s.answer(req, every))
			} else {
				s.requests <- req
			}
		}
		if err != nil {
			close(s.requests)
			return
		}
	}
}

func (s *scriptedServer) write(frames ...[]byte) {
	var all []byte
	for _, f := range frames {
		all = append(all, f...)
	}
	_, _ = s.conn.Write(all)
}

func frame(t *testing.T, r *Response) []byte {
	f, err := EncodeFrame(EncodeResponse(r), ClientMaxBodyBytes)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (s *scriptedServer) answer(req *Request, spec map[string]any) []byte {
	body := spec["body"]
	if m, ok := body.(map[string]any); ok && m["echo"] == "request_uri" {
		body = map[string]any{"name": req.RequestUri}
	}
	raw, _ := json.Marshal(body)
	return frame(s.t, &Response{UUID: req.UUID, RequestUri: req.RequestUri, HttpStatus: int(num(spec, "status")),
		BodyMsgType: "application/json", Headers: map[string]string{}, Body: raw})
}

func push(t *testing.T, id string, seq int, eventType string, data any) []byte {
	if eventType == "" {
		eventType = "STDOUT"
	}
	if data == nil {
		data = map[string]any{}
	}
	body, _ := json.Marshal(map[string]any{"subscription_id": id, "event_type": eventType, "app_name": "a",
		"timestamp": 1, "sequence": seq, "data": data})
	return frame(t, &Response{UUID: newUUID(), RequestUri: EVENT_URI, HttpStatus: 200, BodyMsgType: "application/json",
		Headers: map[string]string{"X-Subscription-Id": id, "X-Event-Type": eventType, "X-App-Name": "a"}, Body: body})
}

type future struct {
	done chan struct{}
	path string
	body map[string]any
	err  error
}

func TestConformanceScripted(t *testing.T) {
	for _, sc := range loadScenarios(t) {
		if sc.Scripted == nil {
			continue
		}
		t.Run(sc.ID, func(t *testing.T) {
			server, client, clock := startScripted(t)
			futures := map[string][]*future{}
			events := map[string]*eventLog{}
			for i, entry := range sc.Scripted.Transcript {
				t.Logf("entry %d: %v", i, entry)
				switch {
				case entry["client"] != nil:
					scriptedClient(t, client, entry, futures, events)
				case entry["server"] != nil:
					server.step(entry)
				case entry["client_clock"] != nil:
					clock.Advance(time.Duration(num(asMap(entry["client_clock"]), "advance_ms")) * time.Millisecond)
				case entry["expect"] != nil:
					scriptedExpect(t, client, asMap(entry["expect"]), futures, events)
				default:
					t.Fatalf("unknown entry %v", entry)
				}
			}
		})
	}
}

func scriptedClient(t *testing.T, c *SvcClient, e map[string]any, futures map[string][]*future, events map[string]*eventLog) {
	switch str(e, "client") {
	case "request":
		count := int(num(e, "count"))
		if count == 0 {
			count = 1
		}
		var fs []*future
		for i := 0; i < count; i++ {
			path := strings.ReplaceAll(str(e, "path"), "${i}", fmt.Sprint(i))
			f := &future{done: make(chan struct{}), path: path}
			fs = append(fs, f)
			go func() {
				defer close(f.done)
				f.err = c.sendJSON(ctxT(t), str(e, "method"), path, nil, nil, &f.body)
			}()
		}
		futures[str(e, "as")] = fs
	case "subscribe":
		log := &eventLog{}
		events[str(e, "events_as")] = log
		var names []string
		for _, n := range asSlice(e["events"]) {
			names = append(names, n.(string))
		}
		f := &future{done: make(chan struct{})}
		futures["subscribe"] = []*future{f}
		go func() {
			defer close(f.done)
			_, f.err = c.SubscribeContext(ctxT(t), SubscribeOption{AppName: str(e, "app"), Events: names}, log.add)
		}()
	case "await":
		for _, f := range futures[str(e, "of")] {
			select {
			case <-f.done:
				if f.err != nil {
					t.Fatalf("%s: %v", str(e, "of"), f.err)
				}
			case <-time.After(30 * time.Second):
				t.Fatalf("%s never completed", str(e, "of"))
			}
		}
	default:
		t.Fatalf("unknown client entry %v", e)
	}
}

func (s *scriptedServer) step(e map[string]any) {
	t := s.t
	switch str(e, "server") {
	case "expect":
		select {
		case req, ok := <-s.requests:
			if !ok {
				t.Fatal("the client closed the connection")
			}
			if req.HttpMethod != str(e, "method") || req.RequestUri != str(e, "path") {
				t.Fatalf("request %s %s, want %s %s", req.HttpMethod, req.RequestUri, e["method"], e["path"])
			}
			for k, v := range asMap(e["headers"]) {
				got := ""
				for hk, hv := range req.Headers {
					if strings.EqualFold(hk, k) {
						got = hv
					}
				}
				if got != v {
					t.Fatalf("header %s = %q, want %q", k, got, v)
				}
			}
			s.current = req
		case <-time.After(30 * time.Second):
			t.Fatal("no request came")
		}
	case "answer":
		s.write(s.answer(s.current, e))
	case "answer_every_request":
		s.mu.Lock()
		s.every = e
		s.mu.Unlock()
	case "push":
		s.write(push(t, str(e, "subscription_id"), int(num(e, "sequence")), str(e, "event_type"), e["data"]))
	case "burst":
		var frames [][]byte
		for _, f := range asSlice(e["frames"]) {
			fm := asMap(f)
			if p := asMap(fm["push"]); p != nil {
				frames = append(frames, push(t, str(p, "subscription_id"), int(num(p, "sequence")), str(p, "event_type"), p["data"]))
			} else {
				frames = append(frames, s.answer(s.current, asMap(fm["answer"])))
			}
		}
		s.write(frames...)
	case "flood":
		ids, seqs := asMap(e["ids"]), asMap(e["sequences"])
		var frames [][]byte
		for seq := int(num(seqs, "from")); seq <= int(num(seqs, "to")); seq++ {
			for i := 0; i < int(num(ids, "count")); i++ {
				frames = append(frames, push(t, fmt.Sprintf("%s%d", str(ids, "prefix"), i), seq, "", nil))
			}
		}
		s.write(frames...)
	case "reset":
		if tc, ok := s.conn.(*tls.Conn); ok {
			if raw, ok := tc.NetConn().(*net.TCPConn); ok {
				_ = raw.SetLinger(0)
			}
		}
		_ = s.conn.Close()
	default:
		t.Fatalf("unknown server entry %v", e)
	}
}

func scriptedExpect(t *testing.T, c *SvcClient, e map[string]any, futures map[string][]*future, events map[string]*eventLog) {
	if counter := str(e, "demux"); counter != "" {
		s, _ := c.DemuxStats()
		got := map[string]int{"buffered_subscriptions": s.BufferedSubscriptions, "dropped_events": s.DroppedEvents, "pending_requests": s.PendingRequests}
		if float64(got[counter]) != num(e, "equals") {
			t.Fatalf("demux %s = %d, want %v", counter, got[counter], e["equals"])
		}
		return
	}
	of := str(e, "of")
	if log, ok := events[of]; ok {
		check := func() bool {
			got := log.snapshot()
			if want := asSlice(e["sequences"]); want != nil {
				seqs := make([]any, len(got))
				for i, ev := range got {
					seqs[i] = float64(ev.Sequence)
				}
				return reflect.DeepEqual(seqs, want)
			}
			var list []any
			for _, ev := range got {
				list = append(list, map[string]any{"subscription_id": ev.SubscriptionID, "event_type": ev.EventType})
			}
			return reflect.DeepEqual(list, e["equals"])
		}
		// Callbacks run on their own goroutine: wait for them (and then hold exactly this).
		eventually(t, fmt.Sprintf("events %v", e), check)
		if s, _ := c.DemuxStats(); s.BufferedSubscriptions != 0 {
			t.Fatalf("events left buffered: %+v", s)
		}
		return
	}
	fs := futures[of]
	switch {
	case e["pending"] == true:
		for _, f := range fs {
			select {
			case <-f.done:
				t.Fatalf("%s completed (%v) while it must be pending", of, f.err)
			default:
			}
		}
	case e["error"] != nil:
		for _, f := range fs {
			select {
			case <-f.done:
			case <-time.After(5 * time.Second):
				t.Fatalf("%s did not fail promptly", of)
			}
			if str(e, "error") == "transport_disconnected" && !errors.Is(f.err, ErrTransportDisconnected) {
				t.Fatalf("%s: want ErrTransportDisconnected, got %v", of, f.err)
			}
		}
	case e["count"] != nil:
		if len(fs) != int(num(e, "count")) {
			t.Fatalf("%d results", len(fs))
		}
		for _, f := range fs {
			<-f.done
			if f.err != nil || f.body["name"] != f.path {
				t.Fatalf("%s got %v %v: not its own answer", f.path, f.body, f.err)
			}
		}
	case e["equals"] != nil:
		for _, f := range fs {
			<-f.done
			for k, v := range asMap(e["equals"]) {
				if f.err != nil || !reflect.DeepEqual(f.body[k], v) {
					t.Fatalf("%s = %v (%v), want %s = %v", of, f.body, f.err, k, v)
				}
			}
		}
	default:
		t.Fatalf("unknown expect %v", e)
	}
}

// Hostile input on the TCP socket ends the connection as a transport disconnect: a header
// announcing more than 1 GiB (rejected at the header), a bad magic, an undecodable message.
func TestTCPHostileInputDisconnects(t *testing.T) {
	cases := map[string][]byte{
		"frame above 1 GiB": {0x07, 0xc7, 0x07, 0xf8, 0x40, 0x00, 0x00, 0x01},
		"bad magic":         []byte("HTTP/1.1 400 Bad Request\r\n\r\n"),
		"not msgpack":       {0x07, 0xc7, 0x07, 0xf8, 0, 0, 0, 1, 0xc1},
		"not a response":    {0x07, 0xc7, 0x07, 0xf8, 0, 0, 0, 1, 0x90},
	}
	for name, bytes := range cases {
		t.Run(name, func(t *testing.T) {
			server, client, _ := startScripted(t)
			events, got := collect()
			pending := make(chan error, 1)
			go func() {
				pending <- client.sendJSON(ctxT(t), "GET", "/svc/self", nil, nil, nil)
			}()
			req := <-server.requests
			_ = client.AttachEventCallback("s", events)
			server.write(bytes)
			select {
			case err := <-pending:
				if !errors.Is(err, ErrTransportDisconnected) {
					t.Fatalf("pending request: %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the pending request was not woken")
			}
			select {
			case <-client.Done():
			case <-time.After(10 * time.Second):
				t.Fatal("the transport did not stop")
			}
			eventually(t, "__disconnected__", func() bool { return len(got()) == 1 && got()[0].EventType == EventTypeDisconnected })
			// Later requests fail the same way at once; a late answer changes nothing.
			server.write(server.answer(req, map[string]any{"status": float64(200), "body": map[string]any{}}))
			if err := client.sendJSON(ctxT(t), "GET", "/svc/self", nil, nil, nil); !errors.Is(err, ErrTransportDisconnected) {
				t.Fatalf("later request: %v", err)
			}
		})
	}
}

// Hostile answer headers of GET output are ignored, never trusted: no exit code, no position.
func TestHostileOutputHeaders(t *testing.T) {
	server, client, _ := startScripted(t)
	for _, headers := range []map[string]string{
		{"X-Exit-Code": "abc", "X-Output-Position": "-"},
		{"X-Exit-Code": "99999999999999999999999", "X-Output-Position": "99999999999999999999999"},
		{"X-Exit-Code": "", "X-Output-Position": "1e9"},
	} {
		got := make(chan AppOutput, 1)
		go func() { got <- client.GetAppOutputContext(ctxT(t), "a", 0, 0, 0, "", 0) }()
		req := <-server.requests
		server.write(frame(t, &Response{UUID: req.UUID, RequestUri: req.RequestUri, HttpStatus: 200, Headers: headers, Body: []byte("x")}))
		out := <-got
		if out.Error != nil || out.ExitCode != nil || out.OutputPosition != nil || out.HttpBody != "x" {
			t.Fatalf("%v gave %+v", headers, out)
		}
	}
}

// ForwardTo puts X-Target-Host (and the bearer) on every request; SetForwardTo("") removes it.
func TestForwardToHeader(t *testing.T) {
	server, client, _ := startScriptedWith(t, Option{JwtToken: "tok", ForwardTo: "node-b:6059"})
	ask := func() *Request {
		done := make(chan error, 1)
		go func() { done <- client.sendJSON(ctxT(t), "GET", "/svc/applications", nil, nil, nil) }()
		req := <-server.requests
		server.write(server.answer(req, map[string]any{"status": float64(200), "body": []any{}}))
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		return req
	}
	if req := ask(); req.Headers[headerTargetHost] != "node-b:6059" || req.Headers["Authorization"] != "Bearer tok" {
		t.Fatalf("headers %v", req.Headers)
	}
	client.SetForwardTo("")
	if req := ask(); req.Headers[headerTargetHost] != "" {
		t.Fatalf("headers %v", req.Headers)
	}
	if client.GetForwardTo() != "" {
		t.Fatal("GetForwardTo")
	}
}
