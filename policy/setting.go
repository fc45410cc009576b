package policy

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/sandboxrun/sandboxrun/internal/size"
	"github.com/sandboxrun/sandboxrun/internal/where"
)

// Setting is one value of the policy file with where it came from: the
// file's line, or a built-in default.
type Setting[T any] struct {
	Value T
	// Set is true when the file gave the value; Line is its line.
	Set  bool
	Line int
	// builtin is true when a built-in default filled the value in.
	builtin bool
}

// UnmarshalYAML records the line of the value.
func (s *Setting[T]) UnmarshalYAML(n *yaml.Node) error {
	var v T
	if err := n.Decode(&v); err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	s.Value, s.Set, s.Line = v, true, n.Line
	return nil
}

// MarshalJSON shows the value and its origin, for `policy show --json`.
func (s Setting[T]) MarshalJSON() ([]byte, error) {
	if !s.Has() {
		return []byte("null"), nil
	}
	return json.Marshal(struct {
		Value T      `json:"value"`
		From  string `json:"from"`
	}{s.Value, s.from()})
}

// Has reports whether the setting has a value, from the file or built in.
func (s Setting[T]) Has() bool { return s.Set || s.builtin }

func (s *Setting[T]) orBuiltin(v T) {
	if !s.Set {
		s.Value, s.builtin = v, true
	}
}

// or returns s when the file set it, else other.
func (s Setting[T]) or(other Setting[T]) Setting[T] {
	if s.Set {
		return s
	}
	return other
}

func (s Setting[T]) from() string {
	if s.Set {
		return fmt.Sprintf("line %d", s.Line)
	}
	return "builtin default"
}

// origin describes where the value came from, e.g. "policy memory.max
// (/etc/sandboxrun/policy.yaml line 4)".
func (s Setting[T]) origin(label, source string) where.Text {
	if s.Set {
		return where.Sprintf("%s (%s line %d)", label, where.Path(source), s.Line)
	}
	return where.Plain("builtin " + strings.TrimPrefix(label, "policy "))
}

func (s Setting[T]) oneOf(key string, allowed ...string) error {
	if !s.Set {
		return nil
	}
	v := fmt.Sprint(s.Value)
	for _, a := range allowed {
		if v == a {
			return nil
		}
	}
	return fmt.Errorf("line %d: %s is %q; use one of: %s", s.Line, key, v, strings.Join(allowed, ", "))
}

// Range is a limit's default and ceiling.
type Range[T any] struct {
	Default Setting[T] `yaml:"default" json:"default"`
	Max     Setting[T] `yaml:"max" json:"max"`
}

type scalar interface {
	~int64 | ~float64
	fmt.Stringer
}

// Duration is a time span: a Go duration (30s, 2m) or a bare number of
// seconds.
type Duration time.Duration

func (d Duration) String() string {
	return strconv.FormatFloat(time.Duration(d).Seconds(), 'f', -1, 64) + "s"
}

// MarshalJSON writes the duration as a string such as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.String()) }

// UnmarshalYAML reads 30s, 2m or 45 (seconds).
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSeconds(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%q is not a duration; write 30s, 2m or a number of seconds", n.Value)
	}
	*d = Duration(v)
	return nil
}

// ParseSeconds reads a duration: a bare number is seconds (5 = 5s), else a
// Go duration (1500ms, 2m). It must be above zero.
func ParseSeconds(s string) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		if math.IsNaN(f) || f <= 0 || f > float64(math.MaxInt64)/float64(time.Second) {
			return 0, fmt.Errorf("%q is not a positive duration", s)
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("%q is not a positive duration; write 30, 30s or 2m", s)
	}
	return d, nil
}

// Size is a number of bytes written with a unit: 512Mi, 2Gi, 512m, 1g.
type Size int64

func (s Size) String() string { return size.Format(int64(s)) }

// MarshalJSON writes the size in bytes.
func (s Size) MarshalJSON() ([]byte, error) { return json.Marshal(int64(s)) }

// UnmarshalYAML reads a size that carries a unit.
func (s *Size) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseSize(n.Value)
	if err != nil || n.Kind != yaml.ScalarNode {
		return fmt.Errorf("%q is not a size; write a number with a unit, e.g. 512Mi or 2Gi", n.Value)
	}
	*s = Size(v)
	return nil
}

// ParseSize reads a size with a binary unit (k, m, g, t with optional i and
// b: 512m, 512Mi, 2GiB), in the grammar of package size. A bare number is
// refused: bytes and MiB are both plausible readings.
func ParseSize(s string) (int64, error) {
	s = strings.TrimSpace(s)
	v, err := size.Parse(s)
	switch {
	case errors.Is(err, size.ErrNoUnit):
		return 0, fmt.Errorf("%q has no unit; write e.g. 512Mi or 2Gi", s)
	case err != nil:
		return 0, fmt.Errorf("%q is not a size; write e.g. 512Mi or 2Gi", s)
	}
	return v, nil
}

// Number is a CPU count such as 0.5 or 2.
type Number float64

func (n Number) String() string { return strconv.FormatFloat(float64(n), 'f', -1, 64) }

// UnmarshalYAML reads a finite number above zero.
func (n *Number) UnmarshalYAML(node *yaml.Node) error {
	f, err := strconv.ParseFloat(node.Value, 64)
	if err != nil || node.Kind != yaml.ScalarNode || math.IsNaN(f) || math.IsInf(f, 0) || f <= 0 {
		return fmt.Errorf("%q is not a number above 0, e.g. 0.5 or 2", node.Value)
	}
	*n = Number(f)
	return nil
}

// Count is a whole number above zero.
type Count int64

func (c Count) String() string { return strconv.FormatInt(int64(c), 10) }

// UnmarshalYAML reads a whole number above zero.
func (c *Count) UnmarshalYAML(node *yaml.Node) error {
	v, err := strconv.ParseInt(node.Value, 10, 64)
	if err != nil || node.Kind != yaml.ScalarNode || v <= 0 {
		return fmt.Errorf("%q is not a whole number above 0", node.Value)
	}
	*c = Count(v)
	return nil
}
