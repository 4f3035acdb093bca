// Package remoteinterest holds the tests of the interest protocol between a
// worker and callers on another node, over real protoactor remotes in one
// process (issue 34 item 3). It has no code of its own: the tests live
// apart from actors/worker's so that the goroutines protoactor leaks when a
// connection attempt fails (see main_test.go) are ignored only here.
package remoteinterest
