package sim

func newBackend(w *world, n *node) host  { return nil }
func newFrontend(w *world, n *node) host { return nil }
func newWorker(w *world, n *node) host   { return nil }
