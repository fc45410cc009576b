package egress

import (
	"bufio"
	"compress/flate"
	"compress/gzip"
	"compress/zlib"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// maskResponse hides the run's secret values in an intercepted answer
// before the sandbox reads it: in header names and values, in the body
// (its Content-Encoding undone first, so the mask sees the bytes the value
// would be in), and in the trailers, names announced with the header and
// values checked when the body ends. The proxy asks intercepted hosts for
// identity; gzip and deflate from a server that ignores it are decoded,
// and any other coding is refused (an error here is the sandbox's 502),
// since nothing in it could be checked.
func maskResponse(resp *http.Response, vals [][]byte) error {
	resp.Header = maskHeader(resp.Header, vals)
	resp.Trailer = maskHeader(resp.Trailer, vals)
	body, err := decodedBody(resp)
	if err != nil {
		return err
	}
	m := newMaskReader(body, vals)
	m.trailer = func() { resp.Trailer = maskHeader(resp.Trailer, vals) }
	resp.Body = m
	return nil
}

// maskHeader is h with each secret value in its names and values masked.
func maskHeader(h http.Header, vals [][]byte) http.Header {
	if h == nil {
		return nil
	}
	out := make(http.Header, len(h))
	for k, vs := range h {
		k = maskName(k, vals)
		for _, v := range vs {
			out[k] = append(out[k], maskString(v, vals))
		}
		if vs == nil {
			if _, ok := out[k]; !ok {
				out[k] = nil
			}
		}
	}
	return out
}

// errEncoding is an answer in a coding the proxy cannot look into.
var errEncoding = errors.New("egress proxy: unsupported Content-Encoding")

// decodedBody is resp's body with its Content-Encoding undone, and resp's
// header changed to say so (no Content-Encoding, no Content-Length).
func decodedBody(resp *http.Response) (io.ReadCloser, error) {
	var codings []string
	for _, v := range resp.Header.Values("Content-Encoding") {
		for c := range strings.SplitSeq(v, ",") {
			if c = strings.ToLower(strings.TrimSpace(c)); c != "" && c != "identity" {
				codings = append(codings, c)
			}
		}
	}
	if len(codings) == 0 {
		return resp.Body, nil
	}
	for _, c := range codings {
		if c != "gzip" && c != "x-gzip" && c != "deflate" {
			return nil, fmt.Errorf("%w: %s answered with Content-Encoding %q although the proxy asked for identity; the proxy decodes gzip and deflate to check answers for a secret's value, and cannot check %q",
				errEncoding, resp.Request.URL.Host, strings.Join(codings, ", "), c)
		}
	}
	body := resp.Body
	for i := len(codings) - 1; i >= 0; i-- {
		body = &decoder{src: body, coding: codings[i]}
	}
	resp.Header.Del("Content-Encoding")
	resp.Header.Del("Content-Length")
	resp.ContentLength = -1
	return body, nil
}

// decoder undoes one content coding, from the first read on (so an empty
// body, e.g. a HEAD's, is simply empty).
type decoder struct {
	src    io.ReadCloser
	coding string
	r      io.Reader
	err    error
}

func (d *decoder) Read(p []byte) (int, error) {
	if d.r == nil && d.err == nil {
		d.r, d.err = d.open()
	}
	if d.err != nil {
		return 0, d.err
	}
	return d.r.Read(p)
}

func (d *decoder) open() (io.Reader, error) {
	br := bufio.NewReader(d.src)
	head, err := br.Peek(2)
	if len(head) == 0 && err == io.EOF {
		return nil, io.EOF
	}
	if d.coding != "deflate" {
		return gzip.NewReader(br)
	}
	// "deflate" is zlib by the RFC; some servers send raw deflate.
	if len(head) == 2 && head[0]&0x0f == 8 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		return zlib.NewReader(br)
	}
	return flate.NewReader(br), nil
}

func (d *decoder) Close() error {
	if c, ok := d.r.(io.Closer); ok {
		_ = c.Close()
	}
	return d.src.Close()
}

// maskName masks each secret value in a header's name without regard to
// case: the client reading the answer canonicalises names, so the case a
// value arrives in is not the case it was sent in.
func maskName(k string, vals [][]byte) string {
	lower := strings.ToLower(k)
	if len(lower) != len(k) {
		return maskString(k, vals)
	}
	b := []byte(k)
	for _, v := range vals {
		lv := strings.ToLower(string(v))
		if lv == "" {
			continue
		}
		for i := 0; ; {
			j := strings.Index(lower[i:], lv)
			if j < 0 {
				break
			}
			for n := range len(lv) {
				b[i+j+n] = '*'
			}
			i += j + len(lv)
		}
	}
	return string(b)
}
