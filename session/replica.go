package session

import (
	"errors"
	"fmt"

	"github.com/sandboxrun/sandboxrun/internal/where"
)

// When several servers share the load (serve --replica), each one owns the
// sessions it creates, and a session's id names its owner so that any
// replica can route a request to it without a shared database:
//
//	<replica>-<26 random base32 characters>
//
// The replica part is a DNS label (a-z, 0-9, '-'; 63 at most), which never
// holds a character of the random part's alphabet that could be mistaken
// for the separator: the random part is the last 26 characters, preceded
// by '-'. An id without a replica part (26 characters, as a single server
// makes them) belongs to whichever server holds it.

// ErrBadReplica is wrapped by ValidReplica's errors.
var ErrBadReplica = errors.New("bad replica name")

// maxReplicaLen is a DNS label's longest length.
const maxReplicaLen = 63

// ValidReplica checks that name is a DNS label, as a StatefulSet Pod's
// name is: what the peer URL puts in a host name must not carry a dot, a
// colon or a slash.
func ValidReplica(name string) error {
	bad := func(why string) error {
		return fmt.Errorf("%w %q: %s; use lowercase letters, digits and '-' (at most %d, starting and ending with a letter or digit), e.g. sandboxrun-0",
			ErrBadReplica, name, why, maxReplicaLen)
	}
	switch {
	case name == "":
		return bad("it is empty")
	case len(name) > maxReplicaLen:
		return bad(fmt.Sprintf("it is %d characters long", len(name)))
	case name[0] == '-' || name[len(name)-1] == '-':
		return bad("it starts or ends with '-'")
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return bad(fmt.Sprintf("it holds %q", c))
		}
	}
	return nil
}

// NewID returns a fresh id naming replica as its owner, or an id of the
// single-server shape when replica is "". The random part is 128 bits.
func NewID(replica string) string {
	if replica == "" {
		return newID()
	}
	return replica + "-" + newID()
}

// IDReplica parses an id: the replica it names ("" for an id of the
// single-server shape) and whether the id has one of the two exact shapes
// NewID makes. Nothing else is an id.
func IDReplica(id string) (string, bool) {
	if len(id) <= idLen {
		return "", validRandom(id)
	}
	cut := len(id) - idLen - 1
	if id[cut] != '-' || !validRandom(id[cut+1:]) {
		return "", false
	}
	replica := id[:cut]
	if ValidReplica(replica) != nil {
		return "", false
	}
	return replica, true
}

// WithReplica makes the store name replica in the ids it creates, and
// refuse ids naming another replica: those are another server's, and never
// reach this store's folders. Open fails when the root holds sessions of
// another replica (a root given to the wrong server). Default "": ids
// without an owner, and a store that holds whatever its root holds.
func WithReplica(name string) Option {
	return func(o *options) { o.replica = name }
}

// ownsID reports whether id is one this store may hold: an id of either
// shape naming no replica or this store's.
func (s *Store) ownsID(id string) bool {
	replica, ok := IDReplica(id)
	return ok && (replica == "" || s.opt.replica == "" || replica == s.opt.replica)
}

// checkReplica refuses a root holding sessions of another replica: served
// here they would be unreachable (requests for them go to their owner),
// and left alone they would expire unseen.
func (s *Store) checkReplica() error {
	if s.opt.replica == "" {
		return nil
	}
	if err := ValidReplica(s.opt.replica); err != nil {
		return err
	}
	for id := range s.sessions {
		if !s.ownsID(id) {
			owner, _ := IDReplica(id)
			return where.Errorf("sessions root %q holds sessions of replica %q, and this server is %q: give each replica its own sessions root, or start this one as %q",
				where.Path(s.root), owner, s.opt.replica, owner)
		}
	}
	return nil
}
