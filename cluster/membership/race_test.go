//go:build race

package membership_test

// raceDetector is true when the tests run with -race.
const raceDetector = true
