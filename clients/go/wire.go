package svc

// The wire messages of TCP and WSS (CONTRACT §4, spec/wire-vectors.json) and the TCP framing:
// an 8-byte header (magic 0x07C707F8, body length, both big-endian) before each msgpack body.

import (
	"encoding/binary"
	"fmt"
	"math"
	"sort"
	"unicode/utf8"
)

// Request is one request message on TCP and WSS.
type Request struct {
	UUID          string
	RequestUri    string
	HttpMethod    string
	ClientAddress string
	Headers       map[string]string
	Query         map[string]string
	Body          []byte
}

// Response is one answer, or a server push (RequestUri == EVENT_URI), on TCP and WSS.
type Response struct {
	UUID        string
	RequestUri  string
	HttpStatus  int
	BodyMsgType string
	Headers     map[string]string
	Body        []byte
}

// Frame and message bounds.
const (
	// FrameMagic starts every TCP frame header. It never changes.
	FrameMagic uint32 = 0x07C707F8
	// FrameHeaderSize is the size of the frame header; the length field excludes it.
	FrameHeaderSize = 8
	// ClientMaxBodyBytes is the client's bound on a frame body, received and sent (1 GiB).
	ClientMaxBodyBytes = 1 << 30
	// DaemonMaxBodyBytes is the daemon's inbound bound (256 MiB).
	DaemonMaxBodyBytes = 256 << 20
	// UnauthenticatedMaxBodyBytes is what the daemon takes before a connection has authenticated.
	UnauthenticatedMaxBodyBytes = 1 << 20

	maxUUIDChars       = 128
	maxRequestURIBytes = 8 << 10
	maxMapEntries      = 256
	maxEntryBytes      = 64 << 10
)

// WireError is a message that cannot be decoded. Category is one of invalid_msgpack, not_a_map,
// missing_field, wrong_type, limit_exceeded (messages) or bad_magic, too_large (frames).
type WireError struct {
	Category string
	Field    string
	Detail   string
}

func (e *WireError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("wire message: %s (%s): %s", e.Category, e.Field, e.Detail)
	}
	return fmt.Sprintf("wire message: %s: %s", e.Category, e.Detail)
}

func wireErr(category, field, detail string) *WireError {
	return &WireError{Category: category, Field: field, Detail: detail}
}

// EncodeRequest encodes r as its msgpack map, keys in the contract's order.
func EncodeRequest(r *Request) []byte {
	w := &mpWriter{buf: make([]byte, 0, 128+len(r.Body))}
	w.mapHeader(7)
	w.str("uuid")
	w.str(r.UUID)
	w.str("request_uri")
	w.str(r.RequestUri)
	w.str("http_method")
	w.str(r.HttpMethod)
	w.str("client_addr")
	w.str(r.ClientAddress)
	w.str("headers")
	w.strMap(sortedKeys(r.Headers), r.Headers)
	w.str("query")
	w.strMap(sortedKeys(r.Query), r.Query)
	w.str("body")
	w.bin(r.Body)
	return w.buf
}

// EncodeResponse encodes r as its msgpack map, keys in the contract's order.
func EncodeResponse(r *Response) []byte {
	w := &mpWriter{buf: make([]byte, 0, 128+len(r.Body))}
	w.mapHeader(6)
	w.str("uuid")
	w.str(r.UUID)
	w.str("request_uri")
	w.str(r.RequestUri)
	w.str("http_status")
	w.int(int64(r.HttpStatus))
	w.str("body_msg_type")
	w.str(r.BodyMsgType)
	w.str("headers")
	w.strMap(sortedKeys(r.Headers), r.Headers)
	w.str("body")
	w.bin(r.Body)
	return w.buf
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// DecodeRequest decodes one msgpack Request; a refused input gives a *WireError.
func DecodeRequest(b []byte) (*Request, error) {
	fields, err := topMap(b)
	if err != nil {
		return nil, err
	}
	r := &Request{}
	if r.UUID, err = requiredString(fields, "uuid", maxUUIDChars, true); err != nil {
		return nil, err
	}
	if r.RequestUri, err = requiredString(fields, "request_uri", maxRequestURIBytes, false); err != nil {
		return nil, err
	}
	if r.HttpMethod, err = requiredString(fields, "http_method", maxEntryBytes, false); err != nil {
		return nil, err
	}
	if r.ClientAddress, err = optionalString(fields, "client_addr"); err != nil {
		return nil, err
	}
	if r.Headers, err = stringMap(fields, "headers"); err != nil {
		return nil, err
	}
	if r.Query, err = stringMap(fields, "query"); err != nil {
		return nil, err
	}
	if r.Body, err = bodyBytes(fields); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeResponse decodes one msgpack Response; a refused input gives a *WireError.
func DecodeResponse(b []byte) (*Response, error) {
	fields, err := topMap(b)
	if err != nil {
		return nil, err
	}
	r := &Response{}
	if r.UUID, err = requiredString(fields, "uuid", maxUUIDChars, true); err != nil {
		return nil, err
	}
	if r.RequestUri, err = requiredString(fields, "request_uri", maxRequestURIBytes, false); err != nil {
		return nil, err
	}
	status, ok := fields["http_status"]
	if !ok || status == nil {
		return nil, wireErr("missing_field", "http_status", "required")
	}
	code, isInt := intValue(status)
	if !isInt || code < 100 || code > 599 {
		return nil, wireErr("wrong_type", "http_status", "an integer in [100, 599] is required")
	}
	r.HttpStatus = int(code)
	if r.BodyMsgType, err = optionalString(fields, "body_msg_type"); err != nil {
		return nil, err
	}
	if r.Headers, err = stringMap(fields, "headers"); err != nil {
		return nil, err
	}
	if r.Body, err = bodyBytes(fields); err != nil {
		return nil, err
	}
	return r, nil
}

func topMap(b []byte) (map[string]any, error) {
	v, err := mpDecode(b)
	if err != nil {
		return nil, wireErr("invalid_msgpack", "", err.Error())
	}
	m, ok := v.(mpMap)
	if !ok {
		return nil, wireErr("not_a_map", "", "the message is not a msgpack map")
	}
	fields := make(map[string]any, len(m))
	for _, p := range m {
		if k, ok := p.key.(string); ok {
			fields[k] = p.value
		}
	}
	return fields, nil
}

func intValue(v any) (int64, bool) {
	switch n := v.(type) {
	case int64:
		return n, true
	case uint64:
		return math.MaxInt64, true
	}
	return 0, false
}

func requiredString(fields map[string]any, name string, limit int, countChars bool) (string, error) {
	v, ok := fields[name]
	if !ok || v == nil {
		return "", wireErr("missing_field", name, "required")
	}
	s, ok := v.(string)
	if !ok {
		return "", wireErr("wrong_type", name, "a string is required")
	}
	size := len(s)
	if countChars {
		size = utf8.RuneCountInString(s)
	}
	if size > limit {
		return "", wireErr("limit_exceeded", name, fmt.Sprintf("over %d", limit))
	}
	return s, nil
}

func optionalString(fields map[string]any, name string) (string, error) {
	v := fields[name]
	if v == nil {
		return "", nil
	}
	s, ok := v.(string)
	if !ok {
		return "", wireErr("wrong_type", name, "a string is required")
	}
	if len(s) > maxEntryBytes {
		return "", wireErr("limit_exceeded", name, "over 64 KiB")
	}
	return s, nil
}

func stringMap(fields map[string]any, name string) (map[string]string, error) {
	out := map[string]string{}
	v := fields[name]
	if v == nil {
		return out, nil
	}
	m, ok := v.(mpMap)
	if !ok {
		return nil, wireErr("wrong_type", name, "a map of strings is required")
	}
	if len(m) > maxMapEntries {
		return nil, wireErr("limit_exceeded", name, fmt.Sprintf("over %d entries", maxMapEntries))
	}
	for _, p := range m {
		k, ok := p.key.(string)
		if !ok {
			return nil, wireErr("wrong_type", name, "a key is not a string")
		}
		s, ok := p.value.(string)
		if !ok {
			return nil, wireErr("wrong_type", name+"."+k, "a string is required")
		}
		if len(k) > maxEntryBytes || len(s) > maxEntryBytes {
			return nil, wireErr("limit_exceeded", name+"."+k, "over 64 KiB")
		}
		out[k] = s
	}
	return out, nil
}

func bodyBytes(fields map[string]any) ([]byte, error) {
	switch b := fields["body"].(type) {
	case nil:
		return []byte{}, nil
	case []byte:
		return b, nil
	case string:
		return []byte(b), nil
	}
	return nil, wireErr("wrong_type", "body", "bytes are required")
}

// EncodeFrame prefixes body with the frame header; a body above maxBody is refused (too_large).
func EncodeFrame(body []byte, maxBody int) ([]byte, error) {
	if len(body) > maxBody {
		return nil, wireErr("too_large", "", fmt.Sprintf("a body of %d bytes is above the bound of %d", len(body), maxBody))
	}
	out := make([]byte, FrameHeaderSize, FrameHeaderSize+len(body))
	binary.BigEndian.PutUint32(out[0:4], FrameMagic)
	binary.BigEndian.PutUint32(out[4:8], uint32(len(body)))
	return append(out, body...), nil
}

// FrameDecoder splits a byte stream into frame bodies. It fails on a bad magic and as soon as a
// header announces more than its bound, without waiting for the body.
type FrameDecoder struct {
	maxBody int
	buf     []byte
	err     error
}

// NewFrameDecoder returns a decoder whose body bound is maxBody bytes.
func NewFrameDecoder(maxBody int) *FrameDecoder {
	return &FrameDecoder{maxBody: maxBody}
}

// Push adds bytes read from the stream and returns the bodies they complete, in order. After an
// error the decoder stays failed.
func (d *FrameDecoder) Push(chunk []byte) ([][]byte, error) {
	if d.err != nil {
		return nil, d.err
	}
	d.buf = append(d.buf, chunk...)
	var bodies [][]byte
	for {
		if len(d.buf) >= 4 && binary.BigEndian.Uint32(d.buf[0:4]) != FrameMagic {
			d.err = wireErr("bad_magic", "", fmt.Sprintf("frame header starts with %x", d.buf[0:4]))
			return bodies, d.err
		}
		if len(d.buf) < FrameHeaderSize {
			return bodies, nil
		}
		size := uint64(binary.BigEndian.Uint32(d.buf[4:8]))
		if size > uint64(d.maxBody) {
			d.err = wireErr("too_large", "", fmt.Sprintf("a frame announces %d bytes, above the bound of %d", size, d.maxBody))
			return bodies, d.err
		}
		if uint64(len(d.buf)-FrameHeaderSize) < size {
			return bodies, nil
		}
		end := FrameHeaderSize + int(size)
		bodies = append(bodies, append([]byte{}, d.buf[FrameHeaderSize:end]...))
		d.buf = d.buf[end:]
		if len(d.buf) == 0 {
			d.buf = nil
		}
	}
}

// Buffered is the number of bytes of an incomplete frame held by the decoder.
func (d *FrameDecoder) Buffered() int { return len(d.buf) }
