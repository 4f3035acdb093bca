package main

import (
	"flag"
	"fmt"

	"github.com/foreman-actors/foreman/cluster/node"
)

// membershipEnv names the environment variable that gives --membership's
// default.
const membershipEnv = "FOREMAN_MEMBERSHIP"

// resolveMembership settles the membership URL: --membership wins over
// FOREMAN_MEMBERSHIP, and either is checked here, so that a bad value is a
// usage error (exit 2) before anything starts. --seeds belongs to seed
// membership: with etcd it is a mistake in the deployment, and so is etcd
// on the all-in-one node, which runs no cluster.
func (a *nodeArgs) resolveMembership(fs *flag.FlagSet, getenv func(string) string) error {
	given, seedsGiven := false, false
	fs.Visit(func(f *flag.Flag) {
		given = given || f.Name == "membership"
		seedsGiven = seedsGiven || f.Name == "seeds"
	})
	name := "--membership"
	if !given {
		if env := getenv(membershipEnv); env != "" {
			a.membership, name = env, membershipEnv
		}
	}
	m, err := node.ParseMembership(a.membership)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", errUsage, name, err)
	}
	a.membership = m.String()
	if !m.IsEtcd() {
		return nil
	}
	if a.role == node.RoleAll {
		return fmt.Errorf("%w: %s %s: the all-in-one node runs no cluster; give a port (backend 2000-2999, frontend 3000-3999, worker otherwise) to run a cluster node", errUsage, name, m)
	}
	if seedsGiven {
		return fmt.Errorf("%w: --seeds is for seed membership; with %s %s the nodes find each other in etcd: drop --seeds", errUsage, name, m)
	}
	return nil
}
