package jobwire

import (
	"errors"
	"fmt"
)

// Middleware wraps a Handler: it gets the next layer (the next middleware, or
// the job type's handler) and returns the handler that runs in its place, as
// asynq's mux.Use does. The returned Handler sees the job and the context the
// handler would get; it may pass a derived context down (TracingMiddleware
// passes one carrying its span), change the result, turn an error into a
// result, or return an error of its own: what it returns is what the Worker
// acks or fails, by the rules of Handler (a panic is recovered and fails the
// job).
type Middleware func(next Handler) Handler

// Use adds middlewares around every handler of the worker, all job types.
// The first middleware given (in this call, or in an earlier one) is the
// outermost: Use(a, b) runs a, which calls b, which calls the handler.
// Register them before Run: once Run has been called, Use changes nothing and
// returns an error, as it does for a nil middleware.
func (w *Worker) Use(mws ...Middleware) error {
	for i, mw := range mws {
		if mw == nil {
			return fmt.Errorf("jobwire: Worker.Use: middleware %d is nil", i)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started {
		return errors.New("jobwire: Worker.Use called after Run: register middlewares before Run")
	}
	w.middlewares = append(w.middlewares, mws...)
	return nil
}

// chain wraps h in mws, mws[0] outermost.
func chain(h Handler, mws []Middleware) Handler {
	for i := len(mws) - 1; i >= 0; i-- {
		h = mws[i](h)
	}
	return h
}
