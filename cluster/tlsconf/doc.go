// Package tlsconf loads a node's TLS material (its certificate, its key and
// the cluster CA) and hands out the mutual-TLS configurations every Foreman
// link uses: protoactor's gRPC remote, the membership endpoint, the HTTP API
// and other clients such as etcd's.
//
// The rules are the same everywhere:
//
//   - both ends present a certificate, and each verifies the other's chain
//     against the cluster CA only: never the system roots, never
//     InsecureSkipVerify;
//   - a client checks the host it dialled against the server certificate's
//     SANs, so node certificates carry every name and address the node is
//     reached by;
//   - [Load] checks the files before anything listens (the key matches, the
//     certificate is valid now, the CA signed it) and its errors name the
//     file and say what to do;
//   - [Material.Reload] swaps certificate, key and CA at once and keeps the
//     old material when the new files are bad; every handshake reads the
//     current material, so new connections see a rotation without a
//     restart while established ones carry on.
//
// gen.go makes a CA and node certificates (ECDSA P-256) for `foreman certs`
// and for tests, which generate their own and commit none.
package tlsconf
