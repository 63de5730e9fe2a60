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

// serviceConfig is the default service config (load balancing) of every
// channel, Client's and Worker's, used when the resolver supplies none; a
// grpc.WithDefaultServiceConfig given in WithDialOptions replaces it (it is
// applied later). round_robin: a target that resolves to several brokers
// (dns:/// of a Kubernetes headless Service) gets a subchannel to each and
// the calls spread over them. A Worker's Claim stream (a Work stream, which
// also carries its acks) stays on one broker while its Fail and ExtendLease
// calls (and AckBatch calls, when acks go that way) spread: a broker that
// settles a job of another broker's stream tells that broker, which frees
// the stream's slot at once (broker.proto, Claim). With a target that
// resolves to a single address it behaves as pick_first.
const serviceConfig = `{"loadBalancingConfig": [{"round_robin": {}}]}`

// newConn opens the channel to addr with the default service config
// serviceConfig.
func newConn(addr string, cfg *clientConfig) (*grpc.ClientConn, error) {
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
