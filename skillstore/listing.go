package skillstore

import (
	"encoding/hex"
	"fmt"
	"io/fs"
	"strings"
)

// Listing sums a skill's entries given one at a time, by the rule of
// Digest (package documentation): a copy of a skill made elsewhere (an
// archive packed for a sandbox) names its content by the same digest as
// the folder it came from. The zero value is ready.
type Listing struct{ recs []record }

// Dir adds the folder at rel (slash-separated, below the skill folder).
func (l *Listing) Dir(rel string) {
	l.recs = append(l.recs, record{kind: 'd', mode: "755", sum: "-", path: rel})
}

// Link adds the symbolic link at rel to target.
func (l *Listing) Link(rel, target string) {
	l.recs = append(l.recs, record{kind: 'l', mode: "777", sum: sumOf(strings.NewReader(target)), path: rel})
}

// File adds the regular file at rel with permission bits perm and the
// SHA-256 sum of its bytes.
func (l *Listing) File(rel string, perm fs.FileMode, sum []byte) {
	l.recs = append(l.recs, record{kind: 'f', mode: fmt.Sprintf("%o", fileMode(int64(perm))), sum: hex.EncodeToString(sum), path: rel})
}

// Digest is the digest of the entries added so far.
func (l *Listing) Digest() string { return digestOf(append([]record(nil), l.recs...)) }
