package svc

// TCP transport: TLS, each message in a frame (wire.go), one reader goroutine.

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"sync"
	"time"
)

const connectTimeout = 10 * time.Second

type tcpConn struct {
	conn    net.Conn
	writeMu sync.Mutex
	maxBody int
}

func (t *tcpConn) write(msg []byte) error {
	frame, err := EncodeFrame(msg, t.maxBody)
	if err != nil {
		return err
	}
	t.writeMu.Lock()
	defer t.writeMu.Unlock()
	_, err = t.conn.Write(frame)
	return err
}

func (t *tcpConn) closeConn() error { return t.conn.Close() }

// dialTCP connects to host:port with TLS and starts the reader.
func dialTCP(ctx context.Context, address string, o Option) (*persistentRequester, error) {
	cfg, err := tlsConfig(o)
	if err != nil {
		return nil, err
	}
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return nil, fmt.Errorf("svc: TCP address %q: %w", address, err)
	}
	cfg.ServerName = host
	dialer := &tls.Dialer{NetDialer: &net.Dialer{Timeout: connectTimeout}, Config: cfg}
	conn, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil, fmt.Errorf("%w: connect %s: %v", ErrTransportDisconnected, address, err)
	}
	if tc, ok := conn.(*tls.Conn); ok {
		if raw, ok := tc.NetConn().(*net.TCPConn); ok {
			_ = raw.SetNoDelay(true)
		}
	}
	tc := &tcpConn{conn: conn, maxBody: ClientMaxBodyBytes}
	p := newPersistentRequester(tc, newDemuxer(), false)
	go readFrames(conn, p, ClientMaxBodyBytes)
	return p, nil
}

// readFrames is the single reader: frames ─▶ Responses ─▶ demultiplexer. Any error (EOF,
// reset, bad magic, a frame above the bound, an undecodable message) stops the transport.
func readFrames(conn net.Conn, p *persistentRequester, maxBody int) {
	decoder := NewFrameDecoder(maxBody)
	buf := make([]byte, 64<<10)
	for {
		n, err := conn.Read(buf)
		if n > 0 {
			bodies, ferr := decoder.Push(buf[:n])
			for _, body := range bodies {
				resp, derr := DecodeResponse(body)
				if derr != nil {
					p.fail(derr)
					return
				}
				p.demux.deliver(resp)
			}
			if ferr != nil {
				p.fail(ferr)
				return
			}
		}
		if err != nil {
			p.fail(err)
			return
		}
	}
}
