// Package core is the throttler's pure decision code: seed 002's
// timer-based throttler FSM, the strict Limiter (sliding window, token
// bucket, slices), the Rate type and its text form ("10/s"), and the
// cluster permit throttler's core (PermitCore).
//
// It is protoactor-free and reads no clock (every call takes now), so the
// throttler actor (actors/throttler, its shell) and other pure cores use
// the same code: the master core's per-key rates decide with Limiter in
// ModeSlidingWindow (actors/master/core/keyrate.go).
package core
