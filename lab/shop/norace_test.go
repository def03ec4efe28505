//go:build !race

package shop_test

// raceAllocs is zero without the race detector (race_test.go).
const raceAllocs = 0
