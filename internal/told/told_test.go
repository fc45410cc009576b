package told

import (
	"log/slog"
	"testing"

	"github.com/stretchr/testify/require"
)

// A host folder whose path is also the name the sandbox gives it (skills
// kept at /skills on the host) is not a leak: the answer is told as is.
// Another host folder still is.
func TestSayKnowsSandboxNames(t *testing.T) {
	c := &Names{log: slog.New(slog.DiscardHandler), places: []place{
		{forms: []string{"/skills/hello"}, shown: "/skills/hello"},
		{forms: []string{"/workspace"}, shown: "/workspace"},
		{forms: []string{"/skills"}, shown: "the skills folder"},
		{forms: []string{"/srv/sessions"}, shown: "the sessions folder"},
		{forms: []string{"/w"}, shown: "the uploaded skills folder"},
	}}
	for _, told := range []string{
		"script \"scripts/x.py\": /skills/hello/scripts/x.py does not exist",
		"no skill \"nope\" in the skills folder",
		"cannot write /workspace/out: read-only",
	} {
		require.Equal(t, told, c.Say("operator", told))
	}
	require.NotContains(t, c.Say("operator", "creating a session under /srv/sessions/ab: disk full"), "/srv/sessions")
	require.NotContains(t, c.Say("operator", "reading /w/up/x: gone"), "/w/", "a host path that only begins like a sandbox name is still caught")
	require.NotContains(t, c.Say("operator", "see file:///srv/sessions/ab"), "/srv/sessions")
	require.Equal(t, "/skills/hello/scripts/x.py", c.Name("/skills/hello/scripts/x.py"))
	require.Equal(t, "the skills folder/other", c.Name("/skills/other"))
}

// holdsPath finds a host path wherever a message could put it, and only
// there.
func TestHoldsPath(t *testing.T) {
	const p = "/srv/sessions"
	for text, want := range map[string]bool{
		"/srv/sessions":                      true,
		"under /srv/sessions.":               true,
		"under /srv/sessions...":             true,
		"under /srv/sessions/ab: gone":       true,
		`root "/srv/sessions": in use`:       true,
		"(/srv/sessions)":                    true,
		"see file:///srv/sessions/x":         true,
		"a /srv/sessions, and more":          true,
		"/srv/sessions2 is another folder":   false,
		"/srv/sessions.txt is another file":  false,
		"/srv/sessions-old is another":       false,
		"/data/srv/sessions is another path": false,
		"x/srv/sessions":                     false,
		"nothing here":                       false,
	} {
		require.Equal(t, want, holdsPath(text, p), text)
	}
}
