package svc

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// specPath is a file of the repository's spec/ folder (this module lives in clients/go).
func specPath(parts ...string) string {
	return filepath.Join(append([]string{"..", "..", "spec"}, parts...)...)
}

type wireVector struct {
	Name         string          `json:"name"`
	Kind         string          `json:"kind"`
	Hex          string          `json:"hex"`
	Decoded      json.RawMessage `json:"decoded"`
	Canonical    bool            `json:"canonical"`
	MaxBodyBytes int             `json:"max_body_bytes"`
	Error        *struct {
		Category string `json:"category"`
		Field    string `json:"field"`
	} `json:"error"`
}

// hexBytes is {"$hex": "..."}, the vectors' lossless form of bytes.
type hexBytes struct {
	Hex string `json:"$hex"`
}

func (h hexBytes) bytes(t *testing.T) []byte {
	b, err := hex.DecodeString(h.Hex)
	if err != nil {
		t.Fatalf("bad $hex: %v", err)
	}
	return b
}

type decodedMessage struct {
	UUID        string            `json:"uuid"`
	RequestURI  string            `json:"request_uri"`
	HTTPMethod  string            `json:"http_method"`
	ClientAddr  string            `json:"client_addr"`
	HTTPStatus  int               `json:"http_status"`
	BodyMsgType string            `json:"body_msg_type"`
	Headers     map[string]string `json:"headers"`
	Query       map[string]string `json:"query"`
	Body        hexBytes          `json:"body"`
}

func loadWireVectors(t *testing.T) []wireVector {
	raw, err := os.ReadFile(specPath("wire-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var vectors []wireVector
	if err := json.Unmarshal(raw, &vectors); err != nil {
		t.Fatal(err)
	}
	if len(vectors) < 40 {
		t.Fatalf("only %d wire vectors", len(vectors))
	}
	return vectors
}

func TestWireVectors(t *testing.T) {
	for _, v := range loadWireVectors(t) {
		t.Run(v.Name, func(t *testing.T) {
			input, err := hex.DecodeString(v.Hex)
			if err != nil {
				t.Fatal(err)
			}
			switch v.Kind {
			case "request", "response":
				checkMessageVector(t, v, input)
			case "frame":
				checkFrameVector(t, v, input)
			default:
				t.Fatalf("unknown kind %q", v.Kind)
			}
		})
	}
}

func checkMessageVector(t *testing.T, v wireVector, input []byte) {
	var err error
	var got decodedMessage
	var reencoded []byte
	if v.Kind == "request" {
		var r *Request
		if r, err = DecodeRequest(input); err == nil {
			got = decodedMessage{UUID: r.UUID, RequestURI: r.RequestUri, HTTPMethod: r.HttpMethod,
				ClientAddr: r.ClientAddress, Headers: r.Headers, Query: r.Query, Body: hexBytes{hex.EncodeToString(r.Body)}}
			reencoded = EncodeRequest(r)
		}
	} else {
		var r *Response
		if r, err = DecodeResponse(input); err == nil {
			got = decodedMessage{UUID: r.UUID, RequestURI: r.RequestUri, HTTPStatus: r.HttpStatus,
				BodyMsgType: r.BodyMsgType, Headers: r.Headers, Body: hexBytes{hex.EncodeToString(r.Body)}}
			reencoded = EncodeResponse(r)
		}
	}
	if v.Error != nil {
		var we *WireError
		if !errors.As(err, &we) {
			t.Fatalf("decoding must fail with %s, got %v", v.Error.Category, err)
		}
		if we.Category != v.Error.Category || (v.Error.Field != "" && we.Field != v.Error.Field) {
			t.Fatalf("want %s/%s, got %s/%s", v.Error.Category, v.Error.Field, we.Category, we.Field)
		}
		return
	}
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var want decodedMessage
	if err := json.Unmarshal(v.Decoded, &want); err != nil {
		t.Fatal(err)
	}
	if want.Headers == nil {
		want.Headers = map[string]string{}
	}
	if v.Kind == "request" && want.Query == nil {
		want.Query = map[string]string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded\n got %+v\nwant %+v", got, want)
	}
	// Go maps have no order: byte equality holds when no map has two entries; otherwise the
	// encoding must decode back to the same message.
	if v.Canonical && len(want.Headers) <= 1 && len(want.Query) <= 1 {
		if !bytes.Equal(reencoded, input) {
			t.Fatalf("canonical encoding differs:\n got %x\nwant %x", reencoded, input)
		}
	}
	var again decodedMessage
	if v.Kind == "request" {
		r, err := DecodeRequest(reencoded)
		if err != nil {
			t.Fatal(err)
		}
		again = decodedMessage{UUID: r.UUID, RequestURI: r.RequestUri, HTTPMethod: r.HttpMethod,
			ClientAddr: r.ClientAddress, Headers: r.Headers, Query: r.Query, Body: hexBytes{hex.EncodeToString(r.Body)}}
	} else {
		r, err := DecodeResponse(reencoded)
		if err != nil {
			t.Fatal(err)
		}
		again = decodedMessage{UUID: r.UUID, RequestURI: r.RequestUri, HTTPStatus: r.HttpStatus,
			BodyMsgType: r.BodyMsgType, Headers: r.Headers, Body: hexBytes{hex.EncodeToString(r.Body)}}
	}
	if !reflect.DeepEqual(again, want) {
		t.Fatalf("round trip\n got %+v\nwant %+v", again, want)
	}
}

func checkFrameVector(t *testing.T, v wireVector, input []byte) {
	var want struct {
		Bodies []hexBytes `json:"bodies"`
	}
	if len(v.Decoded) > 0 {
		if err := json.Unmarshal(v.Decoded, &want); err != nil {
			t.Fatal(err)
		}
	}
	run := func(label string, chunks [][]byte) {
		d := NewFrameDecoder(v.MaxBodyBytes)
		var bodies [][]byte
		var err error
		for _, c := range chunks {
			var got [][]byte
			got, err = d.Push(c)
			bodies = append(bodies, got...)
			if err != nil {
				break
			}
		}
		if len(bodies) != len(want.Bodies) {
			t.Fatalf("%s: %d bodies, want %d", label, len(bodies), len(want.Bodies))
		}
		for i, b := range want.Bodies {
			if !bytes.Equal(bodies[i], b.bytes(t)) {
				t.Fatalf("%s: body %d differs", label, i)
			}
		}
		category := ""
		if v.Error != nil {
			category = v.Error.Category
		}
		var we *WireError
		switch category {
		case "":
			if err != nil || d.Buffered() != 0 {
				t.Fatalf("%s: err %v, %d bytes left", label, err, d.Buffered())
			}
		case "truncated":
			if err != nil || d.Buffered() == 0 {
				t.Fatalf("%s: want a truncated frame buffered, err %v buffered %d", label, err, d.Buffered())
			}
		default:
			if !errors.As(err, &we) || we.Category != category {
				t.Fatalf("%s: want %s, got %v", label, category, err)
			}
		}
	}
	run("one chunk", [][]byte{input})
	perByte := make([][]byte, len(input))
	for i := range input {
		perByte[i] = input[i : i+1]
	}
	run("byte by byte", perByte)
	for cut := 1; cut < len(input); cut++ {
		run("split", [][]byte{input[:cut], input[cut:]})
	}
}

func TestEncodeFrameRefusesAboveBound(t *testing.T) {
	if _, err := EncodeFrame(make([]byte, 11), 10); err == nil {
		t.Fatal("a body above the bound must be refused on send")
	}
	f, err := EncodeFrame([]byte{1, 2}, 10)
	if err != nil || !bytes.Equal(f, []byte{0x07, 0xc7, 0x07, 0xf8, 0, 0, 0, 2, 1, 2}) {
		t.Fatalf("frame %x %v", f, err)
	}
}

func TestMsgpackHostileInputs(t *testing.T) {
	cases := map[string][]byte{
		"deep nesting":         bytes.Repeat([]byte{0x91}, 10000),
		"array32 huge count":   {0xdd, 0xff, 0xff, 0xff, 0xff},
		"map32 huge count":     {0xdf, 0xff, 0xff, 0xff, 0xff},
		"bin32 beyond input":   {0xc6, 0x7f, 0xff, 0xff, 0xff, 0x00},
		"str32 beyond input":   {0xdb, 0xff, 0xff, 0xff, 0xff},
		"ext beyond input":     {0xc9, 0x00, 0x10, 0x00, 0x00, 0x01},
		"truncated float":      {0xcb, 0x00},
		"empty":                {},
		"reserved byte in map": {0x81, 0xa1, 'a', 0xc1},
	}
	for name, input := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := DecodeResponse(input)
			var we *WireError
			if !errors.As(err, &we) || we.Category != "invalid_msgpack" {
				t.Fatalf("want invalid_msgpack, got %v", err)
			}
		})
	}
}

func TestRequestLimitsRefusedBeforeSending(t *testing.T) {
	many := map[string]string{}
	for i := 0; i < 257; i++ {
		many[fmt.Sprint("h", i)] = "v"
	}
	big := strings.Repeat("v", 64<<10+1)
	cases := map[string]*Request{
		"request_uri over 8 KiB":   {RequestUri: "/" + strings.Repeat("a", 8<<10)},
		"257 headers":              {RequestUri: "/", Headers: many},
		"257 query entries":        {RequestUri: "/", Query: many},
		"a header over 64 KiB":     {RequestUri: "/", Headers: map[string]string{"X": big}},
		"a query name over 64 KiB": {RequestUri: "/", Query: map[string]string{big: "v"}},
	}
	for name, r := range cases {
		var we *WireError
		if err := checkRequestLimits(r); !errors.As(err, &we) || we.Category != "limit_exceeded" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if err := checkRequestLimits(&Request{RequestUri: "/" + strings.Repeat("a", 8<<10-1), Headers: map[string]string{"X": strings.Repeat("v", 64<<10)}}); err != nil {
		t.Fatalf("at the limits: %v", err)
	}
}
