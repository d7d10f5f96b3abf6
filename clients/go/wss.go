package svc

// WSS transport: sub-protocol svc-ws, one msgpack message per binary WebSocket message, the
// bearer in the upgrade's Authorization header and in every message; one reader goroutine.

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
)

// WSSubprotocol is the WebSocket sub-protocol of the daemon.
const WSSubprotocol = "svc-ws"

type wssConn struct {
	ws      *websocket.Conn
	writeMu sync.Mutex
}

func (w *wssConn) write(msg []byte) error {
	w.writeMu.Lock()
	defer w.writeMu.Unlock()
	return w.ws.WriteMessage(websocket.BinaryMessage, msg)
}

func (w *wssConn) closeConn() error {
	w.writeMu.Lock()
	_ = w.ws.WriteControl(websocket.CloseMessage,
		websocket.FormatCloseMessage(websocket.CloseNormalClosure, "client closed"), time.Now().Add(time.Second))
	w.writeMu.Unlock()
	return w.ws.Close()
}

// wssURL turns the base URL (https://host:port or wss://host:port) into the WebSocket URL.
func wssURL(base string) (string, error) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("svc: bad URL %q", base)
	}
	switch u.Scheme {
	case "https", "wss":
		u.Scheme = "wss"
	case "http", "ws":
		u.Scheme = "ws"
	default:
		return "", fmt.Errorf("svc: bad URL scheme %q", u.Scheme)
	}
	if u.Path == "" {
		u.Path = "/"
	}
	return u.String(), nil
}

func dialWSS(ctx context.Context, base string, token string, o Option) (*persistentRequester, error) {
	target, err := wssURL(base)
	if err != nil {
		return nil, err
	}
	cfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	dialer := &websocket.Dialer{
		TLSClientConfig:  cfg,
		HandshakeTimeout: connectTimeout,
		Subprotocols:     []string{WSSubprotocol},
		Proxy:            nil,
	}
	header := http.Header{}
	if token != "" {
		header.Set("Authorization", "Bearer "+token)
	}
	if o.ForwardTo != "" {
		header.Set(headerTargetHost, o.ForwardTo)
	}
	ws, resp, err := dialer.DialContext(ctx, target, header)
	if err != nil {
		if resp != nil {
			// Refused with an HTTP answer (401 invalid_token, 403, …): the daemon's error.
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			_ = resp.Body.Close()
			refused := newAPIError("WebSocket upgrade", resp.StatusCode, body, flatHeaders(resp.Header))
			if resp.StatusCode == http.StatusUnauthorized && token != "" && refused.Code == "unauthorized" && len(body) == 0 {
				// A bare 401 to an upgrade that carried a bearer: the bearer was refused.
				refused.Code = ErrInvalidToken.Code
			}
			return nil, refused
		}
		return nil, fmt.Errorf("%w: WebSocket upgrade: %v", ErrTransportDisconnected, err)
	}
	if resp != nil && resp.Body != nil {
		_ = resp.Body.Close()
	}
	if !strings.EqualFold(ws.Subprotocol(), WSSubprotocol) {
		_ = ws.Close()
		return nil, fmt.Errorf("%w: the server did not select the %s sub-protocol", ErrTransportDisconnected, WSSubprotocol)
	}
	ws.SetReadLimit(ClientMaxBodyBytes)
	p := newPersistentRequester(&wssConn{ws: ws}, newDemuxer(), token != "")
	go readWSS(ws, p)
	return p, nil
}

func readWSS(ws *websocket.Conn, p *persistentRequester) {
	for {
		kind, data, err := ws.ReadMessage()
		if err != nil {
			p.fail(err)
			return
		}
		if kind != websocket.BinaryMessage {
			p.fail(fmt.Errorf("a text WebSocket message: binary msgpack only"))
			return
		}
		resp, err := DecodeResponse(data)
		if err != nil {
			p.fail(err)
			return
		}
		p.demux.deliver(resp)
	}
}
