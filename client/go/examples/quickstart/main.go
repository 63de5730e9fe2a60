// Command quickstart is a complete jobwire producer and worker in one
// program: it enqueues one "greet" job on the queue "quickstart", runs a
// Worker that handles it, and exits 0 once the broker has confirmed the
// job's Ack (1 on any failure, or after 30 s without an outcome).
//
//	go run . -addr localhost:50051 -name Ada
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	jobwire "github.com/jobwire/jobwire/client/go"
)

func main() {
	addr := flag.String("addr", "", `broker address ("" = $JOBWIRE_ADDR, else localhost:50051)`)
	name := flag.String("name", "Ada", "who the job greets")
	flag.Parse()
	ctx := context.Background()

	// Producer: enqueue one job; a payload that is not []byte is JSON-encoded.
	c, err := jobwire.Dial(*addr)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	res, err := c.Enqueue(ctx, "quickstart", "greet", map[string]string{"name": *name})
	if err != nil {
		log.Fatalf("enqueue: %v", err) // a *jobwire.Error: UNAVAILABLE when no broker answers
	}
	fmt.Println("enqueued job", res.JobID)

	// Worker: one Claim stream on the queue; the outcome hook reports what
	// became of our job once the broker has answered its Ack (or Fail).
	outcome := make(chan jobwire.Outcome, 1)
	w, err := jobwire.NewWorker(*addr, []string{"quickstart"},
		jobwire.WithOutcomeHook(func(o jobwire.Outcome) {
			if o.Job.ID == res.JobID {
				select {
				case outcome <- o:
				default:
				}
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	w.Handle("greet", func(ctx context.Context, job *jobwire.Job) (any, error) {
		var p struct {
			Name string `json:"name"`
		}
		if err := job.JSON(&p); err != nil {
			return nil, jobwire.NonRetryable(err) // DEAD at once, no retries
		}
		fmt.Printf("handled %s job %s (attempt %d): hello, %s\n", job.Type, job.ID, job.Attempt, p.Name)
		return map[string]string{"greeting": "hello, " + p.Name}, nil // acked, JSON-encoded
	})

	runErr := make(chan error, 1)
	go func() { runErr <- w.Run(ctx) }()
	select {
	case o := <-outcome:
		w.Stop() // graceful: waits for running handlers and their Ack / Fail
		if o.Kind != jobwire.OutcomeAckOK {
			log.Fatalf("job %s: %s %v %v", o.Job.ID, o.Kind, o.Err, o.HandlerErr)
		}
		fmt.Println("acked job", o.Job.ID)
	case err := <-runErr:
		log.Fatalf("worker stopped before the job was done: %v", err)
	case <-time.After(30 * time.Second):
		log.Fatal("no outcome for the job within 30 s")
	}
	if err := <-runErr; err != nil {
		log.Fatal(err)
	}
}
