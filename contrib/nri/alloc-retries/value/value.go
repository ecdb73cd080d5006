// Package value parses the value of a memory.alloc_retries annotation.
package value

import (
	"fmt"
	"strconv"
)

// Max is the largest limit the kernel takes: INT_MAX.
const Max = 2147483647

// Parse returns s if it is "max" or a limit from 0 to Max written the one
// way a person writes it: decimal digits, no sign, no leading zero, no
// space.  The kernel would also take "+5", "0x10" and "010" (its parser is
// base 0), so an annotation it took could mean what its author did not
// read into it; Parse refuses them, and a value out of range, with a
// message that names the accepted forms.
func Parse(s string) (string, error) {
	if s == "max" {
		return s, nil
	}
	ok := s != "" && len(s) <= len("2147483647") && (s == "0" || s[0] != '0')
	for i := 0; ok && i < len(s); i++ {
		ok = s[i] >= '0' && s[i] <= '9'
	}
	if ok {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil && n <= Max {
			return s, nil
		}
	}
	return "", fmt.Errorf("%q is not max or a decimal number from 0 to %d", s, Max)
}
