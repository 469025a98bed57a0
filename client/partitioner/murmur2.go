package partitioner

import "encoding/binary"

// The constants of the murmur2 variant the Java client has used for keyed
// partitioning since 0.8: a fixed seed, 32-bit arithmetic, little-endian blocks.
const (
	murmurSeed uint32 = 0x9747b28c
	murmurM    uint32 = 0x5bd1e995
	murmurR           = 24
)

// Murmur2 hashes b the way the Java client's Utils.murmur2 does. Java returns
// the same 32 bits as a signed int; int32(Murmur2(b)) is that value.
func Murmur2(b []byte) uint32 {
	h := murmurSeed ^ uint32(len(b))
	for len(b) >= 4 {
		k := binary.LittleEndian.Uint32(b)
		k *= murmurM
		k ^= k >> murmurR
		k *= murmurM
		h *= murmurM
		h ^= k
		b = b[4:]
	}
	// The 1-3 byte tail is mixed in from its last byte down, then multiplied once.
	switch len(b) {
	case 3:
		h ^= uint32(b[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(b[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(b[0])
		h *= murmurM
	}
	h ^= h >> 13
	h *= murmurM
	h ^= h >> 15
	return h
}

// ToPositive clears the sign bit, as the Java client's Utils.toPositive does.
// It is not an absolute value: -1 becomes 0x7fffffff, MinInt32 becomes 0.
func ToPositive(x uint32) int32 { return int32(x & 0x7fffffff) }

// PartitionForKey is the keyed mapping every Kafka-compatible Java producer
// uses: ToPositive(Murmur2(key)) % numPartitions. numPartitions counts every
// partition of the topic, led or not, so a key's partition does not move when
// a leader is briefly unknown. numPartitions must be at least 1.
func PartitionForKey(key []byte, numPartitions int32) int32 {
	return ToPositive(Murmur2(key)) % numPartitions
}
