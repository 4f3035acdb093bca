package node

import (
	"errors"
	"fmt"
	"strconv"
)

// Role is what a node does in the cluster, chosen by its port as in the Akka
// sample: 2000-2999 backend, 3000-3999 frontend, anything else a worker node.
type Role int

// The roles. RoleAll runs a backend, a frontend and a worker in one process
// (`foreman` with no port).
const (
	RoleAll Role = iota + 1
	RoleBackend
	RoleFrontend
	RoleWorker
)

// Port ranges of the roles, inclusive.
const (
	BackendPortMin  = 2000
	BackendPortMax  = 2999
	FrontendPortMin = 3000
	FrontendPortMax = 3999
)

// ErrBadPort is returned by ParsePort for an argument that is not a usable
// port.
var ErrBadPort = errors.New("node: bad port")

// String names the role as the CLI and logs show it.
func (r Role) String() string {
	switch r {
	case RoleAll:
		return "all"
	case RoleBackend:
		return "backend"
	case RoleFrontend:
		return "frontend"
	case RoleWorker:
		return "worker"
	default:
		return fmt.Sprintf("Role(%d)", int(r))
	}
}

// RoleForPort returns the role of a node started on port (0 = a worker on a
// free port).
func RoleForPort(port int) Role {
	switch {
	case port >= BackendPortMin && port <= BackendPortMax:
		return RoleBackend
	case port >= FrontendPortMin && port <= FrontendPortMax:
		return RoleFrontend
	default:
		return RoleWorker
	}
}

// PortHelp explains the accepted ports; error messages and usage text use it.
const PortHelp = "a port number: 2000-2999 starts a backend node (2551 and 2552 are the default seeds), " +
	"3000-3999 a frontend node, 0 a worker node on a free port (any other port 1-65535 a worker node on that port); " +
	"no port runs backend, frontend and worker in one process"

// ParsePort parses the node's port argument and returns the port and role.
func ParsePort(arg string) (int, Role, error) {
	port, err := strconv.Atoi(arg)
	if err != nil {
		return 0, 0, fmt.Errorf("%w: %q is not a number; expected %s", ErrBadPort, arg, PortHelp)
	}
	if port < 0 || port > 65535 {
		return 0, 0, fmt.Errorf("%w: %d is outside 0-65535; expected %s", ErrBadPort, port, PortHelp)
	}
	return port, RoleForPort(port), nil
}
