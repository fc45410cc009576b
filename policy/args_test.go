package policy

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseArgs(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"object", `{"a": 1, "b": [true, null]}`, `{"a":1,"b":[true,null]}`},
		{"empty object", `{}`, `{}`},
		{"surrounding whitespace", " \n\t{\"a\":\"x y\"}\r\n ", `{"a":"x y"}`},
		{"empty input", "", `{}`},
		{"blank input", " \n\t ", `{}`},
		{"unicode", `{"name": "café ✓"}`, `{"name":"café ✓"}`},
		{"nested", `{"a": {"b": {"c": []}}}`, `{"a":{"b":{"c":[]}}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs([]byte(tt.in))
			require.NoError(t, err)
			require.JSONEq(t, tt.want, string(got))
			require.Equal(t, tt.want, string(got))
		})
	}
}

func TestParseArgsRefused(t *testing.T) {
	tests := []struct {
		name string
		in   string
		msg  string
	}{
		{"array", `[1, 2]`, "got an array"},
		{"string", `"x"`, "got a string"},
		{"number", `42`, "got a number"},
		{"negative number", `-1.5`, "got a number"},
		{"boolean", `true`, "got a boolean"},
		{"null", `null`, "got null"},
		{"not JSON", `{a: 1}`, "not JSON at byte 2"},
		{"offset counts leading space", `   {"a": }`, "not JSON at byte 10"},
		{"truncated", `{"a": 1`, "not JSON"},
		{"trailing data", `{} {}`, "not JSON"},
		{"trailing garbage", `{"a":1} x`, "not JSON"},
		{"bare word", `hello`, "not JSON"},
		{"invalid utf8", "{\"a\": \"\xff\"}", "UTF-8"},
		{"too big", `{"a":"` + strings.Repeat("x", MaxArgsBytes) + `"}`, "over the 10MiB limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseArgs([]byte(tt.in))
			require.ErrorIs(t, err, ErrBadArgs)
			require.Nil(t, got)
			require.Contains(t, err.Error(), tt.msg)
		})
	}
}

func TestParseArgsSizeBoundary(t *testing.T) {
	pad := MaxArgsBytes - len(`{"a":""}`)
	exact := `{"a":"` + strings.Repeat("x", pad) + `"}`
	require.Len(t, exact, MaxArgsBytes)
	_, err := ParseArgs([]byte(exact))
	require.NoError(t, err, "exactly MaxArgsBytes is allowed")

	_, err = ParseArgs([]byte(exact + " "))
	require.ErrorIs(t, err, ErrBadArgs, "one byte over is refused, whitespace included")
}
