// Package jobwirepb holds the Go stubs of proto/jobwire/v1/*.proto: the
// Broker service (broker.pb.go, broker_grpc.pb.go) and the Admin service
// (admin.pb.go, admin_grpc.pb.go).
//
// The stubs are generated with the protoc-gen-go and protoc-gen-go-grpc
// versions pinned in client/go/setup.sh and committed, so `go get` needs no
// protoc. After editing a .proto, run client/go/generate.sh and commit the
// result; client/go/check_generated.sh (run by client/go/test.sh) fails
// while they differ.
package jobwirepb
