package messages

import "google.golang.org/protobuf/proto"

// CloneWork returns a deep copy of w, every field included, so a field added
// to work.proto is never dropped on the way (nil for nil).
func CloneWork(w *Work) *Work {
	if w == nil {
		return nil
	}
	return proto.Clone(w).(*Work)
}

// StoredWork is the copy of a submitted w that the master journals: what the
// submitter sent, without the fields the master sets when it hands the work
// out (Attempt).
func StoredWork(w *Work) *Work {
	c := CloneWork(w)
	if c != nil {
		c.Attempt = 0
	}
	return c
}

// HandedOutWork is the copy of stored work w that the master sends a
// worker: w with the attempt number it is on.
func HandedOutWork(w *Work, attempt int32) *Work {
	c := CloneWork(w)
	if c != nil {
		c.Attempt = attempt
	}
	return c
}
