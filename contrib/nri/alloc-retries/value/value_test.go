package value

import "testing"

func TestParseTakes(t *testing.T) {
	for _, s := range []string{"max", "0", "1", "3", "10", "2147483647"} {
		if got, err := Parse(s); err != nil || got != s {
			t.Errorf("Parse(%q) = %q, %v; want %q, nil", s, got, err, s)
		}
	}
}

func TestParseRefuses(t *testing.T) {
	for _, s := range []string{
		"", "+5", "-1", "-0", "05", "00", "0x10", "010", "1e3", "2147483648",
		"9999999999", "99999999999999999999", " 1", "1 ", "1\n", "MAX",
		"Max", "infinity", "1;2", "1\x00", "\u0663", "１",
	} {
		if got, err := Parse(s); err == nil {
			t.Errorf("Parse(%q) = %q, nil; want an error", s, got)
		}
	}
}
