package main

import (
	"strings"
	"testing"
)

func TestRowsSelectByName(t *testing.T) {
	if err := checkRows(nil); err != nil {
		t.Fatalf("no -rows runs every row, got %v", err)
	}
	if err := checkRows([]string{"nosuch", "cold"}); err != nil {
		t.Fatalf("one matching substring is enough, got %v", err)
	}
	err := checkRows([]string{"nosuch"})
	if err == nil || !strings.Contains(err.Error(), "library, cold") {
		t.Fatalf("-rows matching nothing is refused with the row names, got %v", err)
	}
	if !selected("engine floor: /bin/true", []string{"floor"}) || selected("library, cold", []string{"warm"}) {
		t.Fatal("selected matches rows by substring")
	}
}
