package svc

// A small msgpack reader and writer for the two wire messages (CONTRACT §4): Request and Response
// are maps of strings, integers, maps of strings and bytes, so a general-purpose codec would only
// add a dependency. The reader is strict (exactly one value, no reserved byte, lengths checked
// against the input before anything is allocated, bounded nesting) because it reads what a socket
// delivers.

import (
	"encoding/binary"
	"errors"
	"math"
)

// mpPair is one entry of a decoded msgpack map, in wire order.
type mpPair struct {
	key   any
	value any
}

// mpMap is a decoded msgpack map (keys of any type, in wire order).
type mpMap []mpPair

// mpExt is a decoded msgpack extension value (kept only so that it is not mistaken for bytes).
type mpExt struct {
	typ  int8
	data []byte
}

const mpMaxDepth = 32

type mpReader struct {
	buf []byte
	pos int
}

// mpDecode decodes exactly one msgpack value from b. Values: nil, bool, int64, uint64 (above
// MaxInt64 only), float64, string, []byte, []any, mpMap, mpExt.
func mpDecode(b []byte) (any, error) {
	r := &mpReader{buf: b}
	v, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if r.pos != len(r.buf) {
		return nil, errors.New("invalid msgpack: trailing bytes after the value")
	}
	return v, nil
}

func (r *mpReader) take(n int) ([]byte, error) {
	if n < 0 || n > len(r.buf)-r.pos {
		return nil, errors.New("invalid msgpack: truncated")
	}
	out := r.buf[r.pos : r.pos+n]
	r.pos += n
	return out, nil
}

func (r *mpReader) uint(n int) (uint64, error) {
	b, err := r.take(n)
	if err != nil {
		return 0, err
	}
	switch n {
	case 1:
		return uint64(b[0]), nil
	case 2:
		return uint64(binary.BigEndian.Uint16(b)), nil
	case 4:
		return uint64(binary.BigEndian.Uint32(b)), nil
	default:
		return binary.BigEndian.Uint64(b), nil
	}
}

func (r *mpReader) length(n int) (int, error) {
	u, err := r.uint(n)
	if err != nil {
		return 0, err
	}
	if u > uint64(len(r.buf)-r.pos) && n > 0 {
		// Every element takes at least one byte: a count above what is left cannot be honest.
		return 0, errors.New("invalid msgpack: length beyond the input")
	}
	return int(u), nil
}

func (r *mpReader) value(depth int) (any, error) {
	if depth > mpMaxDepth {
		return nil, errors.New("invalid msgpack: nested too deeply")
	}
	head, err := r.take(1)
	if err != nil {
		return nil, err
	}
	c := head[0]
	switch {
	case c <= 0x7f:
		return int64(c), nil
	case c >= 0xe0:
		return int64(int8(c)), nil
	case c >= 0x80 && c <= 0x8f:
		return r.mapBody(int(c&0x0f), depth)
	case c >= 0x90 && c <= 0x9f:
		return r.arrayBody(int(c&0x0f), depth)
	case c >= 0xa0 && c <= 0xbf:
		return r.str(int(c & 0x1f))
	}
	switch c {
	case 0xc0:
		return nil, nil
	case 0xc2:
		return false, nil
	case 0xc3:
		return true, nil
	case 0xc4, 0xc5, 0xc6:
		n, err := r.length(1 << (c - 0xc4))
		if err != nil {
			return nil, err
		}
		b, err := r.take(n)
		if err != nil {
			return nil, err
		}
		return append([]byte{}, b...), nil
	case 0xc7, 0xc8, 0xc9:
		n, err := r.length(1 << (c - 0xc7))
		if err != nil {
			return nil, err
		}
		return r.ext(n)
	case 0xca:
		u, err := r.uint(4)
		return float64(math.Float32frombits(uint32(u))), err
	case 0xcb:
		u, err := r.uint(8)
		return math.Float64frombits(u), err
	case 0xcc, 0xcd, 0xce, 0xcf:
		u, err := r.uint(1 << (c - 0xcc))
		if err != nil {
			return nil, err
		}
		if u > math.MaxInt64 {
			return u, nil
		}
		return int64(u), nil
	case 0xd0:
		u, err := r.uint(1)
		return int64(int8(u)), err
	case 0xd1:
		u, err := r.uint(2)
		return int64(int16(u)), err
	case 0xd2:
		u, err := r.uint(4)
		return int64(int32(u)), err
	case 0xd3:
		u, err := r.uint(8)
		return int64(u), err
	case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8:
		return r.ext(1 << (c - 0xd4))
	case 0xd9, 0xda, 0xdb:
		n, err := r.length(1 << (c - 0xd9))
		if err != nil {
			return nil, err
		}
		return r.str(n)
	case 0xdc, 0xdd:
		n, err := r.length(2 << (c - 0xdc))
		if err != nil {
			return nil, err
		}
		return r.arrayBody(n, depth)
	case 0xde, 0xdf:
		n, err := r.length(2 << (c - 0xde))
		if err != nil {
			return nil, err
		}
		return r.mapBody(n, depth)
	}
	return nil, errors.New("invalid msgpack: reserved byte 0xc1")
}

func (r *mpReader) str(n int) (any, error) {
	b, err := r.take(n)
	if err != nil {
		return nil, err
	}
	return string(b), nil
}

func (r *mpReader) ext(n int) (any, error) {
	t, err := r.take(1)
	if err != nil {
		return nil, err
	}
	b, err := r.take(n)
	if err != nil {
		return nil, err
	}
	return mpExt{typ: int8(t[0]), data: append([]byte{}, b...)}, nil
}

func (r *mpReader) arrayBody(n int, depth int) (any, error) {
	if n > len(r.buf)-r.pos {
		return nil, errors.New("invalid msgpack: truncated array")
	}
	out := make([]any, 0, n)
	for i := 0; i < n; i++ {
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

func (r *mpReader) mapBody(n int, depth int) (any, error) {
	if 2*n > len(r.buf)-r.pos {
		return nil, errors.New("invalid msgpack: truncated map")
	}
	out := make(mpMap, 0, n)
	for i := 0; i < n; i++ {
		k, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		out = append(out, mpPair{key: k, value: v})
	}
	return out, nil
}

// mpWriter appends msgpack in the smallest header forms.
type mpWriter struct {
	buf []byte
}

func (w *mpWriter) mapHeader(n int) {
	switch {
	case n <= 15:
		w.buf = append(w.buf, 0x80|byte(n))
	case n <= math.MaxUint16:
		w.buf = append(w.buf, 0xde, byte(n>>8), byte(n))
	default:
		w.buf = append(w.buf, 0xdf)
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(n))
	}
}

func (w *mpWriter) str(s string) {
	n := len(s)
	switch {
	case n <= 31:
		w.buf = append(w.buf, 0xa0|byte(n))
	case n <= math.MaxUint8:
		w.buf = append(w.buf, 0xd9, byte(n))
	case n <= math.MaxUint16:
		w.buf = append(w.buf, 0xda, byte(n>>8), byte(n))
	default:
		w.buf = append(w.buf, 0xdb)
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(n))
	}
	w.buf = append(w.buf, s...)
}

func (w *mpWriter) bin(b []byte) {
	n := len(b)
	switch {
	case n <= math.MaxUint8:
		w.buf = append(w.buf, 0xc4, byte(n))
	case n <= math.MaxUint16:
		w.buf = append(w.buf, 0xc5, byte(n>>8), byte(n))
	default:
		w.buf = append(w.buf, 0xc6)
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(n))
	}
	w.buf = append(w.buf, b...)
}

func (w *mpWriter) int(v int64) {
	switch {
	case v >= 0 && v <= 0x7f:
		w.buf = append(w.buf, byte(v))
	case v >= -32 && v < 0:
		w.buf = append(w.buf, byte(int8(v)))
	case v >= 0 && v <= math.MaxUint8:
		w.buf = append(w.buf, 0xcc, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		w.buf = append(w.buf, 0xcd, byte(v>>8), byte(v))
	case v >= 0 && v <= math.MaxUint32:
		w.buf = append(w.buf, 0xce)
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v))
	case v >= 0:
		w.buf = append(w.buf, 0xcf)
		w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v))
	case v >= math.MinInt8:
		w.buf = append(w.buf, 0xd0, byte(int8(v)))
	case v >= math.MinInt16:
		w.buf = append(w.buf, 0xd1, byte(uint16(v)>>8), byte(uint16(v)))
	case v >= math.MinInt32:
		w.buf = append(w.buf, 0xd2)
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(v))
	default:
		w.buf = append(w.buf, 0xd3)
		w.buf = binary.BigEndian.AppendUint64(w.buf, uint64(v))
	}
}

// strMap writes a map of strings with its keys in the order given.
func (w *mpWriter) strMap(keys []string, m map[string]string) {
	w.mapHeader(len(keys))
	for _, k := range keys {
		w.str(k)
		w.str(m[k])
	}
}
