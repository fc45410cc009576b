package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
	"unicode/utf8"
)

// errTooLarge marks a body over its endpoint's bound: 413, as the sessions
// API answers a file over its quota.
var errTooLarge = errors.New("request body too large")

// readBody reads at most limit bytes of r's body (past that it is
// errTooLarge) within the body timeout (past it, errSlowBody).
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	raw, err := readWithin(w, r, http.MaxBytesReader(w, r.Body, limit))
	if errors.Is(err, errSlowBody) {
		return nil, err
	}
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return nil, fmt.Errorf("%w: the body is over %d bytes", errTooLarge, limit)
		}
		return nil, badRequest("reading the body: %v", err)
	}
	return raw, nil
}

// decodeStrict decodes raw, one JSON value, into v as the endpoint's
// documentation promises and encoding/json alone does not: the text must be
// UTF-8 (the decoder would replace what is not with U+FFFD, so a sandbox
// would run something other than what was sent), a key must match its field
// exactly (the decoder matches case-insensitively), no unknown key, and
// nothing after the value.
func decodeStrict(raw []byte, v any) error {
	if !utf8.Valid(raw) {
		return errors.New("the body is not valid UTF-8; send text as UTF-8 and bytes in a file upload")
	}
	if err := checkSurrogates(raw); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return errors.New("the body holds more than one JSON value")
	}
	return exactKeys(raw, reflect.TypeOf(v))
}

// checkSurrogates refuses a \uD800–\uDFFF escape that is not half of a
// pair: the decoder would turn it into U+FFFD.
func checkSurrogates(raw []byte) error {
	s := string(raw)
	for i := 0; i+6 <= len(s); i++ {
		if s[i] != '\\' {
			continue
		}
		if s[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash
			continue
		}
		r := hex4(s[i+2 : i+6])
		switch {
		case r >= 0xD800 && r < 0xDC00:
			if i+12 > len(s) || s[i+6] != '\\' || s[i+7] != 'u' {
				return errors.New(`the body holds a lone UTF-16 surrogate escape (\uD800-\uDBFF without its pair); send valid Unicode`)
			}
			if lo := hex4(s[i+8 : i+12]); lo < 0xDC00 || lo > 0xDFFF {
				return errors.New(`the body holds a lone UTF-16 surrogate escape (\uD800-\uDBFF without its pair); send valid Unicode`)
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return errors.New(`the body holds a lone UTF-16 surrogate escape (\uDC00-\uDFFF); send valid Unicode`)
		default:
			i += 5
		}
	}
	return nil
}

// hex4 reads four hex digits, or -1.
func hex4(s string) int {
	n := 0
	for _, c := range []byte(s) {
		switch {
		case c >= '0' && c <= '9':
			n = n*16 + int(c-'0')
		case c >= 'a' && c <= 'f':
			n = n*16 + int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			n = n*16 + int(c-'A') + 10
		default:
			return -1
		}
	}
	return n
}

// exactKeys checks that every key of the JSON object raw (and of the
// objects it holds for struct fields) is spelled as a field's json tag.
func exactKeys(raw []byte, t reflect.Type) error {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil //nolint:nilerr // not an object (null): the decode already judged it
	}
	fields := map[string]reflect.Type{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name != "" && name != "-" {
			fields[name] = f.Type
		}
	}
	for k, v := range obj {
		ft, ok := fields[k]
		if !ok {
			return fmt.Errorf("json: unknown field %q (names are case-sensitive)", k)
		}
		if err := exactKeys(v, ft); err != nil {
			return fmt.Errorf("%s: %w", k, err)
		}
	}
	return nil
}
