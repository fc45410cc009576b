package server

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/sandboxrun/sandboxrun"
)

// Replicas say that this server is one of several sharing the load, each
// owning the sessions it created (their ids name it), and how to reach the
// others: a request for another replica's session is forwarded to it.
type Replicas struct {
	// Self is this server's name (a DNS label, e.g. a StatefulSet Pod's
	// rel-sandboxrun-1); the Service must be given the same
	// (sandboxrun.Config.Replica).
	Self string
	// PeerURL is the base URL of another replica, with {replica} standing
	// for its name and {ordinal} for the decimal number that ends it
	// (rel-sandboxrun-1 → 1), e.g.
	// http://{replica}.sandboxrun-headless.ns.svc.cluster.local:8080.
	PeerURL string
	// Count is how many replicas the set has, named as Self with its
	// number replaced by 0 … Count-1 (a StatefulSet's Pods): GET
	// /v1/sessions asks each of them for the caller's sessions. 0: the
	// set is unknown, and a list answers this replica's sessions marked
	// partial.
	Count int
	// Transport carries forwarded requests; nil: a transport of its own
	// that never goes through an HTTP proxy and gives up connecting after
	// ConnectTimeout.
	Transport http.RoundTripper
}

// Placeholders of Replicas.PeerURL.
const (
	placeReplica = "{replica}"
	placeOrdinal = "{ordinal}"
)

// maxOrdinalDigits bounds the number ending a replica's name: the peer URL
// can then reach a bounded set of addresses whatever an id says.
const maxOrdinalDigits = 5

// errBadReplicas is wrapped by what Validate finds wrong.
var errBadReplicas = errors.New("bad replica settings")

// Validate checks the name and the template: the template must name the
// owner, and give an http(s) base URL (no path, query or credentials) for
// this server's own name.
func (c Replicas) Validate() error {
	if err := sandboxrun.ValidReplica(c.Self); err != nil {
		return err
	}
	t := c.PeerURL
	rest := strings.ReplaceAll(strings.ReplaceAll(t, placeReplica, ""), placeOrdinal, "")
	switch {
	case t == "":
		return fmt.Errorf("%w: no peer URL: give the base URL of a replica with {replica} for its name, e.g. http://{replica}.sandboxrun-headless.default.svc.cluster.local:8080", errBadReplicas)
	case !strings.Contains(t, placeReplica) && !strings.Contains(t, placeOrdinal):
		return fmt.Errorf("%w: peer URL %q names no replica: put {replica} (the owner's name) or {ordinal} (the number ending it) where its address differs", errBadReplicas, t)
	case strings.ContainsAny(rest, "{}"):
		return fmt.Errorf("%w: peer URL %q: only {replica} and {ordinal} may be replaced", errBadReplicas, t)
	case strings.Contains(t, placeOrdinal) && ordinal(c.Self) == "":
		return fmt.Errorf("%w: peer URL %q uses {ordinal}, and the replica name %q does not end in a number: name replicas like sandboxrun-0, sandboxrun-1", errBadReplicas, t, c.Self)
	case ordinal(c.Self) == "" && !strings.Contains(t, placeReplica+"."):
		// Any DNS label can then name an owner: as a bare host name it
		// could reach any service the resolver's search list finds.
		return fmt.Errorf("%w: with a replica name that does not end in a number (%q), peer URL %q must put {replica} in a host name under a domain of yours, e.g. http://{replica}.sandboxrun-headless.default.svc.cluster.local:8080; or name replicas like sandboxrun-0, sandboxrun-1",
			errBadReplicas, c.Self, t)
	}
	if _, err := c.peer(c.Self); err != nil {
		return fmt.Errorf("%w: peer URL %q: %w", errBadReplicas, t, err)
	}
	return c.validCount()
}

// maxReplicas bounds Count: a list asks every replica at once.
const maxReplicas = 256

// validCount checks Count against Self: a set that is counted is numbered,
// and Self is one of its numbers.
func (c Replicas) validCount() error {
	n := ordinal(c.Self)
	switch {
	case c.Count == 0:
		return nil
	case c.Count < 0 || c.Count > maxReplicas:
		return fmt.Errorf("%w: %d replicas: give 1 to %d", errBadReplicas, c.Count, maxReplicas)
	case n == "":
		return fmt.Errorf("%w: a count of replicas needs names that end in their number (sandboxrun-0 … sandboxrun-%d), and %q does not", errBadReplicas, c.Count-1, c.Self)
	}
	if i, err := strconv.Atoi(n); err != nil || i >= c.Count || (n != "0" && n[0] == '0') {
		return fmt.Errorf("%w: replica %q is not one of %d numbered 0 to %d: give the set's size (the StatefulSet's replicas)", errBadReplicas, c.Self, c.Count, c.Count-1)
	}
	return nil
}

// names are the replicas of a counted set, Self among them, in the order
// of their numbers.
func (c Replicas) names() []string {
	stem := c.Self[:len(c.Self)-len(ordinal(c.Self))]
	out := make([]string, c.Count)
	for i := range out {
		out[i] = stem + strconv.Itoa(i)
	}
	return out
}

// peer is the base URL of the replica named owner.
func (c Replicas) peer(owner string) (*url.URL, error) {
	s := strings.ReplaceAll(c.PeerURL, placeReplica, owner)
	s = strings.ReplaceAll(s, placeOrdinal, ordinal(owner))
	u, err := url.Parse(s)
	switch {
	case err != nil:
		return nil, err
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("%q is not an http or https URL", s)
	case u.Host == "" || u.Hostname() == "":
		return nil, fmt.Errorf("%q names no host", s)
	case u.User != nil || u.RawQuery != "" || u.Fragment != "" || (u.Path != "" && u.Path != "/"):
		return nil, fmt.Errorf("%q: give scheme, host and port only (no path, query or credentials)", s)
	}
	u.Path = ""
	return u, nil
}

// ordinal is the decimal number ending name ("" when it ends otherwise).
func ordinal(name string) string {
	i := len(name)
	for i > 0 && name[i-1] >= '0' && name[i-1] <= '9' {
		i--
	}
	return name[i:]
}

// sibling reports whether name can be a replica of the same set as Self:
// when Self ends in a number (a StatefulSet's Pods do), another replica
// differs from it only there, by a number of at most maxOrdinalDigits
// without leading zeros. Ids naming anything else are nobody's here.
func (c Replicas) sibling(name string) bool {
	n := ordinal(c.Self)
	if n == "" {
		return true
	}
	stem := c.Self[:len(c.Self)-len(n)]
	m, ok := strings.CutPrefix(name, stem)
	return ok && m != "" && ordinal(m) == m && len(m) <= maxOrdinalDigits && (m == "0" || m[0] != '0')
}

// route is what a replica does with a request naming a session.
type route int

const (
	// serveHere: no session, a session of the single-server shape, one of
	// this replica's, or an id naming nobody of this set (the store then
	// answers 404 without looking for it).
	serveHere route = iota
	// forward to the owner.
	forward
	// misdirected: another replica's session, on a request that was
	// forwarded already; a loop or a wrong peer URL, never forwarded again.
	misdirected
)

// decide routes a request naming session id (or none: ""); forwarded says
// whether it came from another replica.
func (c Replicas) decide(id string, forwarded bool) (route, string) {
	owner, ok := sandboxrun.ReplicaOf(id)
	switch {
	case id == "" || !ok || owner == "" || owner == c.Self || !c.sibling(owner):
		return serveHere, owner
	case forwarded:
		return misdirected, owner
	}
	return forward, owner
}
