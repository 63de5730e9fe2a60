// Package jobwirepb holds the Go stubs of proto/jobwire/v1/broker.proto.
//
// The stubs (broker.pb.go, broker_grpc.pb.go) are generated at build time by
// client/go/build.sh with pinned protoc-gen-go and protoc-gen-go-grpc; they
// are never committed. Run ./setup.sh and ./build.sh in client/go first.
package jobwirepb
