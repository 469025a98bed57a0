package txn

import (
	"math"
	"regexp"
	"unicode/utf16"
)

// PartitionFor returns the __transaction_state partition that coordinates
// a transactional id among n, as Kafka computes it: the absolute value of
// Java's String.hashCode (over UTF-16 code units; math.MinInt32 counts as
// 0) modulo n. Clients find the coordinator with FindCoordinator, so any
// hash would work, but Kafka's lets tools predict the partition the same
// way against weir as against Kafka.
func PartitionFor(transactionalID string, n int) int32 {
	if n <= 0 {
		return 0
	}
	h := javaHashCode(transactionalID)
	if h == math.MinInt32 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % int32(n)
}

// javaHashCode is java.lang.String.hashCode: s[0]*31^(n-1) + ... + s[n-1]
// over the UTF-16 code units, wrapping in int32. Invalid UTF-8 counts as
// U+FFFD per bad byte, as Go decodes it.
func javaHashCode(s string) int32 {
	var h int32
	for _, r := range s {
		if r < 0x10000 {
			h = 31*h + int32(r)
			continue
		}
		r1, r2 := utf16.EncodeRune(r)
		h = 31*h + int32(r1)
		h = 31*h + int32(r2)
	}
	return h
}

// CompilePattern compiles ListTransactions' TransactionalIdPattern (v2+),
// which Kafka matches against whole transactional ids with RE2 syntax.
func CompilePattern(p string) (*regexp.Regexp, error) {
	// Compiled alone first: a pattern that compiles has balanced groups,
	// so anchoring it cannot change what it means.
	if _, err := regexp.Compile(p); err != nil {
		return nil, err
	}
	return regexp.Compile(`^(?:` + p + `)$`)
}
