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

	"github.com/sandboxrun/sandboxrun"
	"github.com/sandboxrun/sandboxrun/internal/caller"
)

// Tokens are the accepted bearer tokens, kept as sha256 digests so the
// server's memory never holds them in the clear for longer than loading,
// each with its label: the name policy, metrics, usage and audit give the
// token's holder.
type Tokens struct {
	digests [][sha256.Size]byte
	labels  []string
}

// minTokenLen refuses tokens a client could guess.
const minTokenLen = 16

// LoadTokens reads a tokens file: one token per line, optionally after a
// label and a space ("team-a 9f86d08…"); blank lines and lines starting
// with # are skipped. A token without a label is labelled after its digest
// (TokenLabel). A short token, a bad label or one used twice is an error
// naming its line.
func LoadTokens(path string) (*Tokens, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokens file: %w", err)
	}
	defer f.Close()
	t := &Tokens{}
	seen := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		label, tok, err := parseTokenLine(line)
		if err != nil {
			return nil, fmt.Errorf("tokens file %s line %d: %w", path, n, err)
		}
		if first, ok := seen[label]; ok {
			return nil, fmt.Errorf("tokens file %s line %d: label %q is already line %d's; give each token a label of its own", path, n, label, first)
		}
		seen[label] = n
		t.add(label, tok)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("tokens file %s: %w", path, err)
	}
	if len(t.digests) == 0 {
		return nil, fmt.Errorf("tokens file %s holds no token: add one per line", path)
	}
	return t, nil
}

// parseTokenLine splits "[label] token".
func parseTokenLine(line string) (label, tok string, err error) {
	fields := strings.Fields(line)
	switch len(fields) {
	case 1:
		tok = fields[0]
	case 2:
		label, tok = fields[0], fields[1]
		if err := sandboxrun.ValidTenantLabel(label); err != nil {
			return "", "", err
		}
	default:
		return "", "", errors.New("expected a token, or a label and a token separated by a space")
	}
	if len(tok) < minTokenLen {
		return "", "", fmt.Errorf("token is %d characters; use at least %d (e.g. openssl rand -hex 32)", len(tok), minTokenLen)
	}
	if label == "" {
		label = TokenLabel(tok)
	}
	return label, tok, nil
}

// TokenLabel is the label of a token the tokens file gives none: "token-"
// and the first 8 hex digits of its sha256 digest, stable across restarts
// and telling nothing of the token.
func TokenLabel(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return "token-" + hex.EncodeToString(sum[:4])
}

// NewTokens accepts the given tokens, each labelled TokenLabel (tests,
// embedding).
func NewTokens(tokens ...string) *Tokens {
	t := &Tokens{}
	for _, tok := range tokens {
		t.add(TokenLabel(tok), tok)
	}
	return t
}

// NewLabelledTokens accepts tokens by label.
func NewLabelledTokens(byLabel map[string]string) *Tokens {
	t := &Tokens{}
	for label, tok := range byLabel {
		t.add(label, tok)
	}
	return t
}

func (t *Tokens) add(label, tok string) {
	t.digests = append(t.digests, sha256.Sum256([]byte(tok)))
	t.labels = append(t.labels, label)
}

// owners is each token's owner (its digest in hex) by label.
func (t *Tokens) owners() map[string]string {
	if t.Empty() {
		return nil
	}
	out := make(map[string]string, len(t.digests))
	for i, d := range t.digests {
		out[t.labels[i]] = hex.EncodeToString(d[:])
	}
	return out
}

// Empty reports whether no token is configured.
func (t *Tokens) Empty() bool { return t == nil || len(t.digests) == 0 }

var errUnauthorized = errors.New("missing or unknown bearer token: send Authorization: Bearer <token>")

// check compares the request's bearer token against every accepted digest,
// in time independent of which one (if any) matches, and returns the
// caller's owner name for sessions (the token's digest in hex) and its
// label; both "" when the server takes no tokens.
func (t *Tokens) check(r *http.Request) (owner, label string, err error) {
	if t.Empty() {
		return "", "", nil
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || tok == "" {
		return "", "", errUnauthorized
	}
	got := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	found := -1
	for i, d := range t.digests {
		if subtle.ConstantTimeCompare(got[:], d[:]) == 1 {
			found = i
		}
	}
	if found < 0 {
		return "", "", errUnauthorized
	}
	return hex.EncodeToString(got[:]), t.labels[found], nil
}

// owner is who made r, as requireToken found it: sessions, uploads and
// MCP connections belong to it.
func owner(r *http.Request) string { return caller.Owner(r.Context()) }

// requireToken wraps h so that only requests with an accepted token reach it.
func (t *Tokens) requireToken(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		who, label, err := t.check(r)
		if err != nil {
			w.Header().Set("WWW-Authenticate", `Bearer realm="sandboxrun"`)
			writeError(w, http.StatusUnauthorized, err)
			return
		}
		ctx := caller.WithLabel(caller.WithOwner(r.Context(), who), label)
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}
