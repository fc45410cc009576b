package images

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const hostDeb822 = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
# http://snapshot.debian.org/archive/debian-security/20250520T000000Z
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
`

func TestParseDeb822Sources(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []aptSource
	}{
		{
			name: "host file with main and security stanzas",
			in:   hostDeb822,
			want: []aptSource{
				{URI: "http://deb.debian.org/debian", Suite: "bookworm", Components: []string{"main"}, SignedBy: "/usr/share/keyrings/debian-archive-keyring.gpg"},
				{URI: "http://deb.debian.org/debian", Suite: "bookworm-updates", Components: []string{"main"}, SignedBy: "/usr/share/keyrings/debian-archive-keyring.gpg"},
				{URI: "http://deb.debian.org/debian-security", Suite: "bookworm-security", Components: []string{"main"}, SignedBy: "/usr/share/keyrings/debian-archive-keyring.gpg"},
			},
		},
		{
			name: "deb-src only, disabled stanza, lower-case keys, several URIs",
			in: `Types: deb-src
URIs: http://src.example/debian
Suites: bookworm
Components: main

Types: deb
Enabled: no
URIs: http://disabled.example/debian
Suites: bookworm
Components: main


types: deb deb-src
uris: http://a.example/debian https://b.example/debian
suites: trixie
components: main contrib
`,
			want: []aptSource{
				{URI: "http://a.example/debian", Suite: "trixie", Components: []string{"main", "contrib"}},
				{URI: "https://b.example/debian", Suite: "trixie", Components: []string{"main", "contrib"}},
			},
		},
		{
			name: "inline key block is not a keyring path",
			in: `Types: deb
URIs: http://c.example/debian
Suites: bookworm
Components: main
Signed-By:
 -----BEGIN PGP PUBLIC KEY BLOCK-----
 .
 mQINBF...
 -----END PGP PUBLIC KEY BLOCK-----
`,
			want: []aptSource{{URI: "http://c.example/debian", Suite: "bookworm", Components: []string{"main"}}},
		},
		{
			name: "comments only",
			in:   "# nothing here\n\n# still nothing\n",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseDeb822Sources(strings.NewReader(tt.in), "test.sources")
			require.NoError(t, err)
			for i := range got {
				require.Equal(t, "test.sources", got[i].File)
				got[i].File = ""
			}
			require.Equal(t, tt.want, got)
		})
	}
}

func TestParseDeb822SourcesRejectsGarbage(t *testing.T) {
	_, err := parseDeb822Sources(strings.NewReader("Types: deb\nthis is not a field\n"), "bad.sources")
	require.ErrorContains(t, err, "neither a field nor a comment")
}

func TestParseOneLineSources(t *testing.T) {
	in := `# main archive
deb [arch=amd64 signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main contrib # trailing
deb-src http://deb.debian.org/debian bookworm main
deb [ arch=amd64 ] http://mirror.example/debian bookworm-updates main
#deb http://commented.example/debian bookworm main
deb http://ftp.example/debian
deb [unterminated http://x.example/debian bookworm main
deb cdrom:[Debian GNU/Linux 12]/ bookworm main
`
	got, err := parseOneLineSources(strings.NewReader(in), "sources.list")
	require.NoError(t, err)
	require.Equal(t, []aptSource{
		{URI: "http://deb.debian.org/debian", Suite: "bookworm", Components: []string{"main", "contrib"}, SignedBy: "/usr/share/keyrings/debian-archive-keyring.gpg", File: "sources.list"},
		{URI: "http://mirror.example/debian", Suite: "bookworm-updates", Components: []string{"main"}, File: "sources.list"},
	}, got)
}

func TestPickArchive(t *testing.T) {
	tests := []struct {
		name    string
		sources []aptSource
		want    string // URI + " " + suite; empty means errNoArchive
	}{
		{
			name: "security and updates are skipped",
			sources: []aptSource{
				{URI: "http://deb.debian.org/debian-security", Suite: "bookworm-security", Components: []string{"main"}},
				{URI: "http://deb.debian.org/debian", Suite: "bookworm-updates", Components: []string{"main"}},
				{URI: "http://deb.debian.org/debian", Suite: "bookworm-backports", Components: []string{"main"}},
				{URI: "http://deb.debian.org/debian", Suite: "bookworm", Components: []string{"main"}},
			},
			want: "http://deb.debian.org/debian bookworm",
		},
		{
			name: "first usable wins",
			sources: []aptSource{
				{URI: "https://one.example/debian", Suite: "bookworm", Components: []string{"main"}},
				{URI: "http://two.example/debian", Suite: "bookworm", Components: []string{"main"}},
			},
			want: "https://one.example/debian bookworm",
		},
		{
			name: "no main component, cdrom, flat repo, odd scheme",
			sources: []aptSource{
				{URI: "http://deb.debian.org/debian", Suite: "bookworm", Components: []string{"contrib"}},
				{URI: "cdrom:[Debian]/", Suite: "bookworm", Components: []string{"main"}},
				{URI: "http://flat.example/repo", Suite: "./", Components: nil},
				{URI: "tor+http://onion.example/debian", Suite: "bookworm", Components: []string{"main"}},
			},
			want: "",
		},
		{name: "nothing", want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := pickArchive(tt.sources)
			if tt.want == "" {
				require.ErrorIs(t, err, errNoArchive)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tt.want, got.URI+" "+got.Suite)
		})
	}
}

// writeTree creates files under root; a nil content makes a directory.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for rel, content := range files {
		p := filepath.Join(root, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
}

func TestHostAptSourcesOrderAndFiltering(t *testing.T) {
	root := t.TempDir()
	writeTree(t, root, map[string]string{
		"etc/apt/sources.list":                                       "# empty on deb822 hosts\n",
		"etc/apt/sources.list.d/b-debian.sources":                    hostDeb822,
		"etc/apt/sources.list.d/a-local.list":                        "deb http://local.example/debian bookworm contrib\n",
		"etc/apt/sources.list.d/nodesource.sources.disabled-by-farm": "Types: deb\nURIs: http://node.example\nSuites: nodistro\nComponents: main\n",
		"etc/apt/sources.list.d/old.list.save":                       "deb http://saved.example/debian bookworm main\n",
	})
	sources, read, err := hostAptSources(root)
	require.NoError(t, err)
	require.Equal(t, []string{
		filepath.Join(root, "etc/apt/sources.list"),
		filepath.Join(root, "etc/apt/sources.list.d/a-local.list"),
		filepath.Join(root, "etc/apt/sources.list.d/b-debian.sources"),
	}, read)
	require.Len(t, sources, 4)
	require.Equal(t, "http://local.example/debian", sources[0].URI)

	got, err := pickArchive(sources)
	require.NoError(t, err)
	require.Equal(t, "http://deb.debian.org/debian", got.URI)
	require.Equal(t, "bookworm", got.Suite)
}

func TestPlanBootstrap(t *testing.T) {
	t.Run("deb822 host with its keyring present", func(t *testing.T) {
		root := t.TempDir()
		writeTree(t, root, map[string]string{
			"etc/apt/sources.list.d/debian.sources":         hostDeb822,
			"usr/share/keyrings/debian-archive-keyring.gpg": "key",
		})
		p, err := planBootstrap(root)
		require.NoError(t, err)
		require.Equal(t, "http://deb.debian.org/debian", p.Mirror)
		require.Equal(t, "bookworm", p.Suite)
		require.Equal(t, "sandboxrun/base:bookworm", p.Tag)
		require.Equal(t, "/usr/share/keyrings/debian-archive-keyring.gpg", p.Keyring)
		require.Equal(t, []string{"main"}, p.Components)
		require.Equal(t, basePackages, p.Include)
		require.Equal(t, baseHash(p), p.Hash)
		require.Equal(t, []string{
			"--variant=minbase", "--components=main",
			"--include=python3,nodejs,jq,git,ca-certificates,bash",
			"--force-check-gpg", "--keyring=/usr/share/keyrings/debian-archive-keyring.gpg",
			"bookworm", "/target", "http://deb.debian.org/debian",
		}, debootstrapArgs(p, "/target"))
	})
	t.Run("one-line host, keyring missing is left to debootstrap", func(t *testing.T) {
		root := t.TempDir()
		writeTree(t, root, map[string]string{
			"etc/apt/sources.list": "deb [signed-by=/nonexistent.gpg] http://ftp.example/debian trixie main\n",
		})
		p, err := planBootstrap(root)
		require.NoError(t, err)
		require.Equal(t, "sandboxrun/base:trixie", p.Tag)
		require.Empty(t, p.Keyring)
		require.NotContains(t, strings.Join(debootstrapArgs(p, "/t"), " "), "--keyring")
	})
	t.Run("no sources at all", func(t *testing.T) {
		_, err := planBootstrap(t.TempDir())
		require.ErrorIs(t, err, ErrBootstrap)
		require.ErrorIs(t, err, errNoArchive)
		require.ErrorContains(t, err, "none found")
		require.ErrorContains(t, err, "deb http://deb.debian.org/debian bookworm main")
	})
}
