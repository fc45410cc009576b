package server

import (
	"bufio"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"github.com/sandboxrun/sandboxrun/internal/caller"
)

// Tokens are the accepted bearer tokens, kept as sha256 digests so the
// server's memory never holds them in the clear for longer than loading.
type Tokens struct {
	digests [][sha256.Size]byte
}

// minTokenLen refuses tokens a client could guess.
const minTokenLen = 16

// LoadTokens reads a tokens file: one token per line; blank lines and lines
// starting with # are skipped. A short token is an error naming its line.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	t := &Tokens{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if len(line) < minTokenLen {
			return nil, fmt.Errorf("tokens file %s line %d: token is %d characters; use at least %d (e.g. openssl rand -hex 32)", path, n, len(line), minTokenLen)
		}
		t.digests = append(t.digests, sha256.Sum256([]byte(line)))
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	if len(t.digests) == 0 {
		return nil, fmt.Errorf("tokens file %s holds no token: add one per line", path)
	}
	return t, nil
}

// NewTokens accepts the given tokens (tests, embedding).
func NewTokens(tokens ...string) *Tokens {
	t := &Tokens{}
	for _, tok := range tokens {
		t.digests = append(t.digests, sha256.Sum256([]byte(tok)))
	}
	return t
}

// Empty reports whether no token is configured.
func (t *Tokens) Empty() bool { return t == nil || len(t.digests) == 0 }

var errUnauthorized = errors.New("missing or unknown bearer token: send Authorization: Bearer <token>")

// check compares the request's bearer token against every accepted digest,
// in time independent of which one (if any) matches, and returns the
// caller's owner name for sessions: the token's digest in hex, or "" when
// the server takes no tokens.
func (t *Tokens) check(r *http.Request) (string, error) {
	if t.Empty() {
		return "", nil
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", errUnauthorized
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	match := 0
	for _, d := range t.digests {
		match |= subtle.ConstantTimeCompare(got[:], d[:])
	}
	if match != 1 {
		return "", errUnauthorized
	}
	return hex.EncodeToString(got[:]), nil
}

// owner is who made r, as requireToken found it: sessions, uploads and
// MCP connections belong to it.
func owner(r *http.Request) string { return caller.Owner(r.Context()) }

// requireToken wraps h so that only requests with an accepted token reach it.
func (t *Tokens) requireToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, err := t.check(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxrun"`)
			writeError(w, http.StatusUnauthorized, err)
			return
		}
		h.ServeHTTP(w, r.WithContext(caller.WithOwner(r.Context(), who)))
	})
}
