package jobwire

// The gRPC channel of a Client or a Worker: the address defaults, the
// default load balancing of each, reconnect backoff and message limits.

import (
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
)

// resolveAddr applies the address defaults: addr, else $JOBWIRE_ADDR, else
// localhost:50051.
func resolveAddr(addr string) string {
	if addr != "" {
		return addr
	}
	if env := os.Getenv("JOBWIRE_ADDR"); env != "" {
		return env
	}
	return DefaultAddr
}

// The default service configs (load balancing) of the channels, used when
// the resolver supplies none; a grpc.WithDefaultServiceConfig given in
// WithDialOptions replaces them (it is applied later). With a target that
// resolves to a single address both behave alike.
const (
	// clientServiceConfig, of a Client's channel: round_robin, so a target
	// that resolves to several brokers (dns:/// of a Kubernetes headless
	// Service) gets a subchannel to each and the calls spread over them.
	clientServiceConfig = `{"loadBalancingConfig": [{"round_robin": {}}]}`
	// workerServiceConfig, of a Worker's channel: pick_first over the
	// addresses in random order. A Claim stream's slot frees only when its
	// job is acked or failed through the broker that holds the stream
	// (broker.proto, Claim), so all of a Worker's calls go to one broker
	// (round_robin would send its acks to the others and stall the stream
	// until leases expire); the shuffle spreads Worker processes over the
	// brokers.
	workerServiceConfig = `{"loadBalancingConfig": [{"pick_first": {"shuffleAddressList": true}}]}`
)

// newConn opens the channel to addr with the default service config
// serviceConfig.
func newConn(addr string, cfg *clientConfig, serviceConfig string) (*grpc.ClientConn, error) {
	opts := []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultServiceConfig(serviceConfig),
		// Reconnect quickly after a broker restart (gRPC's default backoff
		// grows to 120 s).
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff: backoff.Config{
				BaseDelay:  100 * time.Millisecond,
				Multiplier: 1.6,
				Jitter:     0.2,
				MaxDelay:   5 * time.Second,
			},
			MinConnectTimeout: 5 * time.Second,
		}),
		// The broker accepts payloads and results up to --max_payload_bytes.
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxRecvMsgSize)),
	}
	opts = append(opts, cfg.secOpts...)
	opts = append(opts, cfg.dialOpts...)
	target := addr
	if !strings.Contains(addr, "://") && !strings.HasPrefix(addr, "unix:") {
		// A plain host:port is dialled as given: one address, no DNS
		// resolution by gRPC (use dns:///host:port for every address).
		target = "passthrough:///" + addr
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, fmt.Errorf("jobwire: dial %q: %w", addr, err)
	}
	return conn, nil
}
