package route_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/foreman-actors/foreman/actors/route"
)

// A fixed route names the master's PID; a resolver finds it (in a cluster,
// cluster/node's MasterLocator.Resolve). Every failure matches ErrNoMaster.
func Example() {
	fixed := route.Fixed(actor.NewPID("nonhost", "master"))
	pid, _ := fixed.Resolve(context.Background())
	fmt.Println(pid.GetId(), fixed.IsResolver())

	gone := route.Resolver(func(context.Context) (*actor.PID, error) {
		return nil, errors.New("no backend node is up")
	})
	_, err := gone.Resolve(context.Background())
	fmt.Println(errors.Is(err, route.ErrNoMaster))
	fmt.Println(err)
	// Output:
	// master false
	// true
	// route: no master reachable: no backend node is up
}
