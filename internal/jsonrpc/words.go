package jsonrpc

import (
	"encoding/binary"
	"math/bits"
)

// Reading eight bytes at a time (SWAR): a word of eight bytes, read
// little-endian, is tested for the bytes a reader must stop at all at
// once, and the bytes before the first of them go by. A test marks a byte
// by setting its high bit; it may also mark a byte after a marked one
// (a borrow carries upward), never one before, so the lowest mark is the
// first stop. The string readers of this package and the gateway's
// compaction of results (plugins/mcpserver) read so, each with the loop
// written out around its own test: a loop taking the test as a function
// value calls it indirectly at every word, and that cost 40–80 % of the
// time of a 64 KiB string.

const (
	lowBits = 0x0101010101010101 // each byte's lowest bit
	// HighBits is each byte's highest bit: the marks of a test are its
	// word masked with it.
	HighBits = 0x8080808080808080
)

// Word is the word of the eight bytes from b[i] on, read little-endian.
func Word(b []byte, i int) uint64 { return binary.LittleEndian.Uint64(b[i:]) }

// FirstMark is the index in its word of the first byte m marks (m not 0).
func FirstMark(m uint64) int { return bits.TrailingZeros64(m) >> 3 }

// Spread is a word whose every byte is c.
func Spread(c byte) uint64 { return uint64(c) * lowBits }

// Zeros has the high bit set of each zero byte of y, and of no byte
// before the first of them; its other bits are noise. x ^ Spread(c) has a
// zero byte where x has c. A test ORs the words of its parts and masks
// them with HighBits once.
func Zeros(y uint64) uint64 { return below(y, 1) }

// below is Zeros of the bytes of x below n (for n up to 0x80).
func below(x uint64, n byte) uint64 { return (x - Spread(n)) &^ x }

// stringStops marks the bytes a reader of a string must look at: a quote,
// a backslash, a control character (below 0x20).
func stringStops(x uint64) uint64 {
	return (below(x, 0x20) | below(x^Spread('"'), 1) | below(x^Spread('\\'), 1)) & HighBits
}

// escapeStops marks the bytes a reader that skips a string must look at:
// quotes and backslashes.
func escapeStops(x uint64) uint64 {
	return (below(x^Spread('"'), 1) | below(x^Spread('\\'), 1)) & HighBits
}
